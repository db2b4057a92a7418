/**
 * Strays: empty indices that late writes auto-create under a deleted incarnation's name. A write
 * pinned to an incarnation (elasticsearch-store.ts, `outcomes`) is sent without a look at the alias;
 * where the incarnation was deleted and the cluster auto-creates indices, it makes an empty index of
 * that name, finds no document there and fails. Nothing is ever written to it, but it would stay.
 */
import type { estypes } from '@elastic/elasticsearch';
import { epochOfIncarnation, isIncarnationOf } from './incarnation.js';
import type { SearchClient } from './search-client.js';

/**
 * Deletes the strays of `alias`: indices named like its incarnations that are not behind it, older
 * than the one that is (a new incarnation being made is never one), whose mapping is not a lock
 * index's (an auto-created index maps dynamically; every lock index is `strict`, restored or
 * adopted ones included) and that hold no document. The names deleted.
 */
export async function removeStrays(client: SearchClient, alias: string): Promise<string[]> {
  const found = await client.indices.get({
    index: `${alias}-*`,
    expand_wildcards: 'open',
    ignore_unavailable: true,
    allow_no_indices: true,
    features: ['aliases', 'mappings'],
  });
  const current = Object.entries(found).find(([, entry]) => alias in (entry.aliases ?? {}))?.[0];
  if (current === undefined) return [];
  const candidates = Object.entries(found)
    .filter(
      ([name, entry]) => name !== current && isIncarnationOf(alias, name) && epochOfIncarnation(name) < epochOfIncarnation(current) && !isLockMapping(entry),
    )
    .map(([name]) => name);
  const removed: string[] = [];
  for (const name of candidates) {
    const { count } = await client.count({ index: name });
    if (count > 0) continue;
    await client.indices.delete({ index: name }, { ignore: [404] });
    removed.push(name);
  }
  return removed;
}

const isLockMapping = (entry: estypes.IndicesIndexState): boolean => String(entry.mappings?.dynamic) === 'strict';
