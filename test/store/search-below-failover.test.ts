/**
 * The search below a directory runs on the primary's node only. When that node dies, the search
 * answers 400 "no data nodes with criteria [...]" until the cluster has promoted another copy: a
 * failover under way, which the store must retry and, failing that, call unavailable (retryable).
 *
 * A single node cannot lose its primary on demand, so these tests inject the stale view of the
 * shard a client has just after the primary's node died: `search_shards` (wrapped) names a node that
 * is not in the cluster, or another copy, or a copy not started yet. The 400 itself is the real
 * node's answer to a search aimed at that node.
 */
import { createRequire } from 'node:module';
import type { estypes } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { translateError } from '../../functions/store/errors.js';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { StoreUnavailableError } from '../../packages/engine/src/errors.js';
import type { LockDocument } from '../../packages/engine/src/model.js';
import { closeTestClient, freshLockIndex, testClient } from '../support/engine.js';

const namespace = 'failover';
const DEPARTED = 'node-that-left';

function treeLock(key: string, expiresAt: number): LockDocument {
  return {
    namespace,
    granularity: 'tree',
    key,
    lockId: `${namespace}|t|${key}`,
    holders: [{ lease: `lease${key.replaceAll('/', '-')}`, proof: 'p', owner: 'o', mode: 'X', expiresAt, grantedAt: 0, fence: null, request: null }],
    minExpiresAt: expiresAt,
    maxExpiresAt: expiresAt,
    updatedAt: 0,
  };
}

const query = { namespace, path: '/a', selfDocId: `${namespace}|t|/a`, liveAfter: 5_000 };

let admin: SearchClient;
let index: string;
const opened: SearchClient[] = [];

beforeAll(async () => {
  admin = testClient();
  index = await freshLockIndex(admin, 'failover');
  const store = new ElasticsearchLockStore(admin, index);
  for (const [key, expiresAt] of [
    ['/a', 9_000],
    ['/a/b', 9_000],
    ['/a/b/c', 9_000],
    ['/a/old', 1_000],
  ] as const) {
    await store.write([{ kind: 'create', docId: `${namespace}|t|${key}`, body: treeLock(key, expiresAt) }]);
  }
});
afterAll(async () => {
  for (const client of opened) await client.close();
  await closeTestClient(admin);
});

type ShardCopy = estypes.NodeShard;

/** A store whose client sees the primary as `view` says on the n-th search_shards call (1-based). */
function storeSeeing(view: (primary: ShardCopy, call: number) => ShardCopy): { store: ElasticsearchLockStore; calls: () => number } {
  const client = testClient();
  opened.push(client);
  const searchShards = client.searchShards.bind(client) as (request: estypes.SearchShardsRequest) => Promise<estypes.SearchShardsResponse>;
  let calls = 0;
  const stale = async (request: estypes.SearchShardsRequest): Promise<estypes.SearchShardsResponse> => {
    const response = await searchShards(request);
    calls++;
    return { ...response, shards: response.shards.map((copies) => copies.map((copy) => (copy.primary ? view({ ...copy }, calls) : copy))) };
  };
  client.searchShards = stale as unknown as SearchClient['searchShards'];
  return { store: new ElasticsearchLockStore(client, index), calls: () => calls };
}

const keysOf = (result: { self: { body: LockDocument } | null; below: Array<{ body: LockDocument }> }) => ({
  self: result.self?.body.key,
  below: result.below.map((lock) => lock.body.key).sort(),
});
const expected = { self: '/a', below: ['/a/b', '/a/b/c'] };

describe('the search below a directory while the primary fails over', () => {
  it('searched on a node that left: the 400 is retried with the primary looked up again, and the search succeeds', async () => {
    const { store, calls } = storeSeeing((primary, call) => (call === 1 ? { ...primary, node: DEPARTED } : primary));
    expect(keysOf(await store.findLiveBelow(query))).toEqual(expected);
    expect(calls()).toBe(3);
  });

  it('a later search on the same store looks the primary up once, after the search: the copy seen before and after was the primary throughout', async () => {
    const { store, calls } = storeSeeing((primary) => primary);
    expect(keysOf(await store.findLiveBelow(query))).toEqual(expected);
    expect(calls()).toBe(2);
    expect(keysOf(await store.findLiveBelow(query))).toEqual(expected);
    expect(calls()).toBe(3);
  });

  it('the primary moved away from the copy seen at the last search: the lookup after this search tells, and it is searched again on the new one', async () => {
    const { store, calls } = storeSeeing((primary, call) => (call === 3 ? { ...primary, allocation_id: { id: 'after-a-failover' } } : primary));
    expect(keysOf(await store.findLiveBelow(query))).toEqual(expected);
    // The next search trusts the copy seen last, the lookup after it disagrees, and the search is made again.
    expect(keysOf(await store.findLiveBelow(query))).toEqual(expected);
    expect(calls()).toBe(5);
  });

  it('the primary moved between the lookups before and after the search: searched again', async () => {
    const { store, calls } = storeSeeing((primary, call) => (call === 2 ? { ...primary, allocation_id: { id: 'promoted-replica' } } : primary));
    expect(keysOf(await store.findLiveBelow(query))).toEqual(expected);
    expect(calls()).toBe(4);
  });

  it('the primary not started yet: looked up again until it is', async () => {
    const { store, calls } = storeSeeing((primary, call) => (call <= 2 ? { ...primary, state: 'INITIALIZING' } : primary));
    expect(keysOf(await store.findLiveBelow(query))).toEqual(expected);
    expect(calls()).toBe(4);
  });

  it('a primary that never comes back within the budget is StoreUnavailableError (retryable, not ambiguous), in about 2 s at most', async () => {
    const { store, calls } = storeSeeing((primary) => ({ ...primary, node: DEPARTED }));
    const started = Date.now();
    const failure = await store.findLiveBelow(query).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as StoreUnavailableError).retryable).toBe(true);
    expect((failure as StoreUnavailableError).context.ambiguous).toBeFalsy();
    expect((failure as StoreUnavailableError).message).toContain('no data nodes with criteria');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(calls()).toBeGreaterThan(1);
    expect(calls()).toBeLessThanOrEqual(5);
  });

  it("translateError maps the node's 400 to a search aimed at a node that left to StoreUnavailableError, from the store's client and (Elasticsearch) either entry's", async () => {
    const clients: SearchClient[] = [admin];
    // The Elasticsearch client's CommonJS entry raises classes of its own; OpenSearch's client has one entry that matters here.
    if (inject('searchProduct') === 'elasticsearch') {
      const commonJs = createRequire(import.meta.url)('@elastic/elasticsearch') as typeof import('@elastic/elasticsearch');
      const apiKey = inject('esApiKey');
      const cjs = new commonJs.Client({ nodes: inject('esUrl').split(','), ...(apiKey ? { auth: { apiKey } } : {}), maxRetries: 0 });
      opened.push(cjs);
      clients.push(cjs);
    }
    for (const client of clients) {
      const refused = await client.search({ index, preference: `_only_nodes:${DEPARTED}`, size: 0 }).catch((error: unknown) => error);
      expect((refused as { statusCode?: number }).statusCode).toBe(400);
      const translated = translateError(refused, 'search below', index);
      expect(translated).toBeInstanceOf(StoreUnavailableError);
      expect((translated as StoreUnavailableError).context).toEqual({ operation: 'search below', statusCode: 400 });
    }
  });
});
