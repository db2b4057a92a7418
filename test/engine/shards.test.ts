/**
 * A lock index with several primary shards (index:create --shards N), on the real single node: every
 * request is routed by namespace (functions/store/routing.ts), so a namespace lives on one shard and
 * its fencing tokens come from that shard's one sequence, while namespaces spread over the shards.
 * Here: namespaces land on different shards, and in each the document, tree (a directory waiting for
 * a file below, through the search below on its shard's primary) and global locks behave; tokens grow
 * within a namespace; the sweeper, list and inspect see locks on every shard. And a lock index of one
 * shard keeps the documents written before routing existed.
 */
import type { estypes } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore, ensureLockIndex, lockIndexDefinition, lockIndexShards, routingOf } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError, StoreRejectedError } from '../../packages/engine/src/errors.js';
import { compareFencingTokens } from '../../packages/engine/src/fencing.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import type { LockDocument } from '../../packages/engine/src/model.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

const SHARDS = 3;

let client: SearchClient;
let index: string;
let engine: LockService;
/** One namespace per shard of the lock index: namespaces[i] lives on shard i. */
const namespaces: string[] = [];

const shardOf = async (namespace: string): Promise<number> => {
  const { shards } = await client.searchShards({ index, routing: namespace });
  expect(shards).toHaveLength(1);
  return shards[0]![0]!.shard;
};

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'shards', { shards: SHARDS });
  engine = engineOn(client, index);
  const found = new Map<number, string>();
  for (let n = 0; found.size < SHARDS && n < 200; n++) {
    const namespace = `tenant-${n}`;
    const shard = await shardOf(namespace);
    if (!found.has(shard)) found.set(shard, namespace);
  }
  for (let shard = 0; shard < SHARDS; shard++) namespaces.push(found.get(shard)!);
});
afterAll(async () => closeTestClient(client));

const refused = async (promise: Promise<unknown>): Promise<LockHeldError> => {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(LockHeldError);
  return error as LockHeldError;
};

/** How many documents of `namespace` each shard holds, searched shard by shard. */
async function documentsPerShard(namespace: string): Promise<number[]> {
  await client.indices.refresh({ index });
  const counts: number[] = [];
  for (let shard = 0; shard < SHARDS; shard++) {
    const response = await client.search({ index, preference: `_shards:${shard}`, query: { term: { namespace } }, size: 0, track_total_hits: true });
    counts.push((response.hits.total as estypes.SearchTotalHits).value);
  }
  return counts;
}

describe(`a lock index with ${SHARDS} shards`, () => {
  it('is made with that many shards, requires routing, and keeps its count when ensured again with another', async () => {
    expect(await lockIndexShards(client, index)).toBe(SHARDS);
    expect(namespaces).toHaveLength(SHARDS);
    expect(new Set(await Promise.all(namespaces.map(shardOf))).size).toBe(SHARDS);
    expect(await ensureLockIndex(client, index, { shards: 5 })).toBe('exists');
    expect(await lockIndexShards(client, index)).toBe(SHARDS);
    // A request that forgets the routing is refused, not answered from the wrong shard.
    const unrouted = await client.get({ index, id: lockDocId(namespaces[0]!, 'global', '*') }).catch((error: unknown) => error);
    expect(JSON.stringify((unrouted as { meta?: { body?: unknown } }).meta?.body)).toMatch(/routing_missing_exception/);
  });

  it('refuses a shard count that is not a whole number from 1 to 1024, before anything is made', async () => {
    for (const shards of [0, 1.5, 1025]) {
      await expect(ensureLockIndex(client, `${index}-never`, { shards })).rejects.toThrow(/shards: must be a whole number from 1 to 1024/);
    }
    expect(await client.indices.existsAlias({ name: `${index}-never` })).toBe(false);
    expect(lockIndexDefinition(1)).toEqual(lockIndexDefinition());
    expect(lockIndexDefinition(1).settings.index.number_of_shards).toBe(1);
    expect(lockIndexDefinition(4)).toMatchObject({ settings: { index: { number_of_shards: 4 } }, mappings: { _routing: { required: true } } });
  });

  it('routes a lock document by the namespace its id starts with', () => {
    expect(routingOf(lockDocId('orders', 'document', 'a|b'))).toBe('orders');
    expect(routingOf(lockDocId('orders', 'tree', '/x|y/z'))).toBe('orders');
    expect(routingOf(lockDocId('a.b:c-d_e', 'global', '*'))).toBe('a.b:c-d_e');
    expect(routingOf(lockDocId('orders', 'document', 'k'.repeat(600)))).toBe('orders');
    // Not a lock document id: routed by itself, as Elasticsearch routes a document sent without routing.
    expect(routingOf('plain-id')).toBe('plain-id');
  });

  it('in each namespace, on its own shard: document, tree and global locks exclude each other, and tokens grow', async () => {
    for (const [shard, namespace] of namespaces.entries()) {
      const tokens: string[] = [];
      // Document locks: one holder per id, all or nothing.
      const first = await engine.acquire({ namespace, granularity: 'document', ids: ['a', 'b'], owner: 'first' });
      tokens.push(first.fencingToken);
      await refused(engine.acquire({ namespace, granularity: 'document', ids: ['b', 'c'], owner: 'second' }));
      await engine.release({ leaseToken: first.leaseToken });
      const second = await engine.acquire({ namespace, granularity: 'document', ids: ['b', 'c'], owner: 'second' });
      tokens.push(second.fencingToken);

      // A tree lock on a directory waits for the file below it (found by the search below, on this shard's primary).
      const file = await engine.acquire({ namespace, granularity: 'tree', path: '/d/e/file', owner: 'editor' });
      tokens.push(file.fencingToken);
      await sleep(300); // established: older than the grace a lock above gives locks below
      await refused(engine.acquire({ namespace, granularity: 'tree', path: '/d', owner: 'renamer' }));
      const pending = engine.acquire({ namespace, granularity: 'tree', path: '/d', owner: 'renamer', waitMs: 5_000 });
      await sleep(400);
      await engine.release({ leaseToken: file.leaseToken });
      const directory = await pending;
      tokens.push(directory.fencingToken);
      await refused(engine.acquire({ namespace, granularity: 'tree', path: '/d/e/other', owner: 'editor' }));
      await engine.release({ leaseToken: directory.leaseToken });

      // The global lock is the root above ids and paths: it waits for the document lock, then excludes both.
      const pendingGlobal = engine.acquire({ namespace, granularity: 'global', owner: 'migrator', waitMs: 5_000 });
      await sleep(300);
      await engine.release({ leaseToken: second.leaseToken });
      const global = await pendingGlobal;
      tokens.push(global.fencingToken);
      await refused(engine.acquire({ namespace, granularity: 'document', ids: ['z'], owner: 'writer' }));
      await refused(engine.acquire({ namespace, granularity: 'tree', path: '/f', owner: 'writer' }));
      await engine.release({ leaseToken: global.leaseToken });
      const after = await engine.acquire({ namespace, granularity: 'document', ids: ['a'], owner: 'after' });
      tokens.push(after.fencingToken);
      await engine.release({ leaseToken: after.leaseToken });

      const sorted = [...tokens].sort(compareFencingTokens);
      expect(sorted, `namespace ${namespace} (shard ${shard})`).toEqual(tokens);
      expect(new Set(tokens).size).toBe(tokens.length);
      // Every document of the namespace is on its shard, none elsewhere (marked directories and the root stay).
      const counts = await documentsPerShard(namespace);
      expect(counts[shard]).toBeGreaterThan(0);
      expect(counts.filter((count, at) => at !== shard && count > 0)).toEqual([]);
    }
  });

  it('holders in different namespaces never meet, whichever shards they live on', async () => {
    const grants = await Promise.all(namespaces.map((namespace) => engine.acquire({ namespace, granularity: 'global', owner: `all-of-${namespace}` })));
    for (const grant of grants) await engine.release({ leaseToken: grant.leaseToken });
  });

  it('the search below looks up the primary of the namespace’s shard (routed), once per search after the first, per namespace', async () => {
    const counting = testClient();
    const routings: Array<string | undefined> = [];
    const searchShards = counting.searchShards.bind(counting) as (request: estypes.SearchShardsRequest) => Promise<estypes.SearchShardsResponse>;
    counting.searchShards = (async (request: estypes.SearchShardsRequest) => {
      routings.push(request.routing as string | undefined);
      return searchShards(request);
    }) as unknown as SearchClient['searchShards'];
    try {
      const store = new ElasticsearchLockStore(counting, index);
      const [a, b] = namespaces as [string, string];
      const below = (namespace: string) => store.findLiveBelow({ namespace, path: '/p', selfDocId: lockDocId(namespace, 'tree', '/p'), liveAfter: Date.now() });
      await below(a);
      expect(routings).toEqual([a, a]);
      await below(a);
      expect(routings).toEqual([a, a, a]);
      // Another namespace, another shard: its own primary, looked up before and after its first search.
      await below(b);
      expect(routings).toEqual([a, a, a, b, b]);
      await below(a);
      expect(routings).toEqual([a, a, a, b, b, a]);
    } finally {
      await counting.close();
    }
  });

  it('refuses a search below when the lookup shows more than one shard for the namespace (its writes would not share one sequence)', async () => {
    const unrouted = testClient();
    const searchShards = unrouted.searchShards.bind(unrouted) as (request: estypes.SearchShardsRequest) => Promise<estypes.SearchShardsResponse>;
    // As if the lookup were not routed: every shard of the lock index answers.
    unrouted.searchShards = (({ routing: _, ...request }: estypes.SearchShardsRequest) => searchShards(request)) as unknown as SearchClient['searchShards'];
    try {
      const store = new ElasticsearchLockStore(unrouted, index);
      const namespace = namespaces[0]!;
      const error = await store
        .findLiveBelow({ namespace, path: '/p', selfDocId: lockDocId(namespace, 'tree', '/p'), liveAfter: Date.now() })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(StoreRejectedError);
      expect((error as Error).message).toMatch(/exactly one shard with one primary \(found 3 shards/);
    } finally {
      await unrouted.close();
    }
  });

  it('the sweeper, list and inspect see the locks of every shard', async () => {
    const prefix = 'swept';
    for (const namespace of namespaces) {
      await engine.acquire({ namespace, granularity: 'document', ids: [`${prefix}-1`, `${prefix}-2`], owner: 'dead', ttlMs: 1_000 });
      await engine.acquire({ namespace, granularity: 'tree', path: `/${prefix}/file`, owner: 'dead', ttlMs: 1_000 });
    }
    const live = await Promise.all(
      namespaces.map((namespace) => engine.acquire({ namespace, granularity: 'document', ids: [`${prefix}-live`], owner: 'alive', ttlMs: 60_000 })),
    );
    await client.indices.refresh({ index });
    // list without a namespace searches every shard; with one, its shard.
    const everywhere = await engine.list({ owner: 'alive' });
    expect(everywhere.map((state) => state.namespace).sort()).toEqual([...namespaces].sort());
    for (const namespace of namespaces) {
      expect((await engine.list({ namespace, owner: 'dead', includeExpired: true })).map((state) => state.key).sort()).toEqual([
        `/${prefix}/file`,
        `${prefix}-1`,
        `${prefix}-2`,
      ]);
      const [state] = await engine.inspect({ namespace, granularity: 'document', ids: [`${prefix}-live`] });
      expect(state?.holders.map((holder) => holder.owner)).toEqual(['alive']);
    }
    await sleep(1_100);
    await client.indices.refresh({ index });
    const report = await engine.sweep({ batchSize: 4 });
    expect(report.deletedLocks).toBe(3 * namespaces.length);
    expect(report.conflicts).toBe(0);
    await client.indices.refresh({ index });
    for (const namespace of namespaces) {
      expect(await engine.list({ namespace, owner: 'dead', includeExpired: true })).toEqual([]);
      expect(await engine.inspect({ namespace, granularity: 'document', ids: [`${prefix}-1`, `${prefix}-2`] })).toEqual([]);
    }
    for (const grant of live) await engine.release({ leaseToken: grant.leaseToken });
  });
});

describe('a lock index of one shard', () => {
  it('keeps the documents written before routing existed: routed requests find, take over and release them', async () => {
    const single = await freshLockIndex(client, 'one-shard', { shards: 1 });
    expect(await lockIndexShards(client, single)).toBe(1);
    const singleEngine = engineOn(client, single);
    const namespace = 'before-routing';
    const docId = lockDocId(namespace, 'document', 'old');
    const expiresAt = Date.now() + 60_000;
    const body: LockDocument = {
      namespace,
      granularity: 'document',
      key: 'old',
      lockId: docId,
      holders: [{ lease: 'earlier', proof: 'p', owner: 'earlier-version', mode: 'X', expiresAt, grantedAt: Date.now(), fence: null, request: null }],
      minExpiresAt: expiresAt,
      maxExpiresAt: expiresAt,
      updatedAt: Date.now(),
    };
    // Written as an earlier version did: no routing.
    await client.index({ index: single, id: docId, document: body, refresh: true });
    const [state] = await singleEngine.inspect({ namespace, granularity: 'document', ids: ['old'] });
    expect(state?.holders.map((holder) => holder.owner)).toEqual(['earlier-version']);
    await refused(singleEngine.acquire({ namespace, granularity: 'document', ids: ['old'], owner: 'now' }));
    expect((await singleEngine.list({ namespace })).map((lock) => lock.key)).toEqual(['old']);
    // Its lease runs out: the routed conditional write takes the unrouted document over, in place.
    const ended = {
      ...body,
      holders: [{ ...body.holders[0]!, expiresAt: Date.now() - 1_000 }],
      minExpiresAt: Date.now() - 1_000,
      maxExpiresAt: Date.now() - 1_000,
    };
    await client.index({ index: single, id: docId, document: ended, refresh: true });
    const grant = await singleEngine.acquire({ namespace, granularity: 'document', ids: ['old'], owner: 'now' });
    await client.indices.refresh({ index: single });
    const found = await client.search({ index: single, query: { ids: { values: [docId] } } });
    expect((found.hits.total as estypes.SearchTotalHits).value).toBe(1);
    expect((await singleEngine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
    expect(await singleEngine.inspect({ namespace, granularity: 'document', ids: ['old'] })).toEqual([]);
  });
});
