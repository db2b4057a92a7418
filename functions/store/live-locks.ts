/**
 * How many live locks a namespace, or an owner, holds: what the quotas on held locks
 * (functions/runtime/quota.ts) compare with their limits. One search of the lock index, counts only.
 *
 * A count, not a safety property: search sees the lock index as its last refresh left it (about a
 * second behind), concurrent acquires do not see each other, and a document counts as soon as any
 * of its holders is live (a shared lock with one live holder and the owner's expired one counts for
 * that owner). Each lock document is one key: a document lock on 20 ids counts 20, a global or tree
 * lock 1.
 */
import type { estypes } from '@elastic/elasticsearch';
import { opaqueIdOption } from './correlation.js';
import { translateError } from './errors.js';
import { namespaceRouting } from './routing.js';
import { type SearchClient, serverName } from './search-client.js';

export interface LiveLockQuery {
  /** Count the live lock documents of this namespace. */
  namespace?: string;
  /** Count the live lock documents with a holder of this owner, in every namespace. */
  owner?: string;
  /** Live: a holder's lease ends after this instant (epoch ms). */
  liveAfter: number;
}

export interface LiveLockCounts {
  namespace?: number;
  owner?: number;
}

export async function countLiveLocks(client: SearchClient, index: string, query: LiveLockQuery): Promise<LiveLockCounts> {
  const filters: Record<string, estypes.QueryDslQueryContainer> = {};
  if (query.namespace !== undefined) filters.namespace = { term: { namespace: query.namespace } };
  if (query.owner !== undefined) filters.owner = { term: { 'holders.owner': query.owner } };
  if (Object.keys(filters).length === 0) return {};
  try {
    const response = await client.search(
      {
        index,
        size: 0,
        track_total_hits: false,
        query: {
          bool: { filter: [{ range: { maxExpiresAt: { gt: query.liveAfter } } }], should: Object.values(filters), minimum_should_match: 1 },
        },
        aggs: { live: { filters: { filters } } },
        // A namespace lives on one shard; an owner's locks may be anywhere.
        ...(query.owner === undefined && query.namespace !== undefined ? { routing: namespaceRouting(query.namespace) } : {}),
      },
      { maxRetries: 1, ...opaqueIdOption() },
    );
    const buckets = (response.aggregations?.live as { buckets?: Record<string, { doc_count: number }> } | undefined)?.buckets ?? {};
    return Object.fromEntries(Object.keys(filters).map((name) => [name, buckets[name]?.doc_count ?? 0]));
  } catch (error) {
    throw translateError(error, 'count live locks', index, false, serverName(client));
  }
}
