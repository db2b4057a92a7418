/**
 * The engine driver's target: a LockService over a lock index, set up as the local stack sets up the
 * functions, with the requests it sends to the lock store counted (request-count.ts).
 *
 *   client     one search client for every operation, set like the functions' (request timeout
 *              3 s, no client retries, no compression), and a lock engine with a token-signing key as
 *              the local stack gives the functions (a signed token lets release delete without reading
 *              first). The local stack runs the handlers inside one serverless-offline process with
 *              one client per function (acquire's, release's), so one client for all operations is
 *              what the HTTP layer has, near enough; a warm Lambda fleet shares nothing (a client per
 *              container), which changes the connection count, not the lock index's work per
 *              operation that this layer measures. One probe at a time per target.
 *   index      the driver's own (created here, deleted on close) unless an index is given.
 *   sweep      after a probe every lock document of its namespace is deleted (the tree granularity's
 *              ancestor markers too), so nothing piles up in the index; those still held are counted.
 */
import { randomBytes } from 'node:crypto';
import { createLockService, createSearchClient, deleteLockIndex, ensureLockIndex } from '../../../functions/store/index.js';
import type { SearchClient, SearchConnection } from '../../../functions/store/search-client.js';
import type { LockService } from '../../../packages/engine/src/service.js';
import { countRequests, type RequestCounts } from './request-count.js';

/** The functions' Elasticsearch request timeout (serverless.yml ES_REQUEST_TIMEOUT_MS). */
const FUNCTION_ES_TIMEOUT_MS = 3_000;

/** One probe at a time per target: the request counts are the client's, whoever sent them. */
export interface EngineTarget {
  readonly engine: LockService;
  readonly client: SearchClient;
  /** The lock index (alias) the engine works on. */
  readonly index: string;
  /** Elasticsearch requests sent through the client so far, in all and by kind. */
  requests(): RequestCounts;
  /** A new probe number (namespaces are unique per probe). */
  nextProbe(): number;
  /** Deletes the lock documents of `namespace`; answers how many still had a holder (should be 0 once every operation released). */
  sweepNamespace(namespace: string): Promise<number>;
  /** Drops the lock index when it was created here, and the client when it was made here. */
  close(): Promise<void>;
}

export interface EngineTargetOptions {
  /** A client to use (not closed on close); otherwise one is made for `connection`. */
  client?: SearchClient;
  /** Elasticsearch or OpenSearch, as the store reaches it (StoreEndpoint.connection()); default the local Elasticsearch. */
  connection?: SearchConnection;
  /** The kit's lock index, kept on close; default: an index of this driver's own, deleted on close. */
  index?: string;
  /** A name for the driver's own index (lowercase); default random. */
  ownIndexName?: string;
  /** Called last by close (e.g. to close a client the caller made for this target). */
  onClose?: () => Promise<void>;
}

/**
 * An engine on the lock store for the driver: the functions' client settings, a fresh token-signing
 * key (as the local stack gives the functions) and a lock index (its own unless `index` is given).
 */
export async function openEngineTarget(options: EngineTargetOptions): Promise<EngineTarget> {
  const made = options.client
    ? undefined
    : createSearchClient({ url: 'http://127.0.0.1:9200', ...options.connection, requestTimeoutMs: FUNCTION_ES_TIMEOUT_MS });
  const client = options.client ?? made!;
  const own = options.index === undefined;
  const index = options.index ?? options.ownIndexName ?? `lt-engine-locks-${randomBytes(4).toString('hex')}`;
  try {
    await ensureLockIndex(client, index);
  } catch (error) {
    await made?.close();
    throw error;
  }
  const { service: engine } = createLockService({ client, index, settings: { tokenSigningKey: randomBytes(32) } });
  const counter = countRequests(client);
  let probes = 0;
  return {
    engine,
    client,
    index,
    requests: () => counter.totals(),
    nextProbe: () => ++probes,
    async sweepNamespace(namespace) {
      await client.indices.refresh({ index });
      // Held: a document with a holder. The tree granularity's ancestor markers (no holders) stay by design; they go too.
      const { count: held } = await client.count({ index, query: { bool: { filter: [{ term: { namespace } }, { exists: { field: 'holders.owner' } }] } } });
      // Search and bulk delete (Elasticsearch's test build has no _delete_by_query).
      for (let round = 0; round < 20; round++) {
        const found = await client.search({ index, query: { term: { namespace } }, size: 1000, _source: false });
        if (found.hits.hits.length === 0) break;
        await client.bulk({ refresh: true, operations: found.hits.hits.map((hit) => ({ delete: { _index: hit._index, _id: hit._id! } })) });
      }
      return held;
    },
    async close() {
      counter.stop();
      if (own) await deleteLockIndex(client, index).catch(() => {});
      await made?.close();
      await options.onClose?.();
    },
  };
}
