/**
 * The lock index as an operator's `status` sees it: the incarnation behind the alias, its epoch and
 * shards, and its documents, scanned in pages of a search (about a second behind; never on a lock's
 * path). Stops after SCAN_LIMIT documents and says so.
 */
import type { estypes } from '@elastic/elasticsearch';
import type { LockDocument } from '../../packages/engine/src/model.js';
import type { LockIndexFacts, StoredLock } from '../../packages/engine/src/store.js';
import { translateError } from './errors.js';
import { epochOfIncarnation } from './incarnation.js';
import { type SearchClient, serverName } from './search-client.js';
import { storedFromHit } from './stored-hit.js';

const PAGE = 1_000;
const SCAN_LIMIT = 20_000;

export async function describeLockIndex(client: SearchClient, alias: string): Promise<LockIndexFacts> {
  try {
    const incarnation = Object.keys(await client.indices.getAlias({ name: alias }))[0] ?? alias;
    const settings = await client.indices.getSettings({ index: incarnation });
    const index = (Object.values(settings)[0] as { settings?: { index?: { number_of_shards?: string; number_of_replicas?: string } } } | undefined)?.settings
      ?.index;
    const { documents, complete } = await scan(client, alias);
    return {
      index: alias,
      incarnation,
      epoch: epochOfIncarnation(incarnation),
      shards: { primaries: Number(index?.number_of_shards ?? 0), replicas: Number(index?.number_of_replicas ?? 0) },
      documents,
      complete,
    };
  } catch (error) {
    throw translateError(error, 'describe the lock index', alias, false, serverName(client));
  }
}

async function scan(client: SearchClient, alias: string): Promise<{ documents: StoredLock[]; complete: boolean }> {
  const documents: StoredLock[] = [];
  let after: estypes.SortResults | undefined;
  while (documents.length < SCAN_LIMIT) {
    const response = await client.search<LockDocument>({
      index: alias,
      size: PAGE,
      seq_no_primary_term: true,
      sort: [{ namespace: 'asc' }, { key: 'asc' }],
      ...(after ? { search_after: after } : {}),
    });
    const hits = response.hits.hits;
    documents.push(...hits.map(storedFromHit));
    if (hits.length < PAGE) return { documents, complete: true };
    after = hits.at(-1)!.sort;
  }
  return { documents, complete: false };
}
