import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createElasticsearchClient, ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LeaseLostError, StoreUnavailableError } from '../../packages/engine/src/errors.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { LockStore, WriteOp } from '../../packages/engine/src/store.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

let client: SearchClient;
let index: string;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'leases');
  engine = engineOn(client, index);
});
afterAll(async () => closeTestClient(client));

describe('fencing tokens', () => {
  it('strictly increase for a key across grants, releases, takeovers and renewals of others', async () => {
    const target = { namespace: 'fence', granularity: 'tree', path: '/a/b/c' } as const;
    const tokens: bigint[] = [];
    for (let round = 0; round < 5; round++) {
      const grant = await engine.acquire({ ...target, owner: `r${round}`, ttlMs: 1_000 });
      tokens.push(BigInt(grant.fencingToken));
      if (round % 2 === 0) await engine.release({ leaseToken: grant.leaseToken });
      else await sleep(1_100); // let it expire: the next round takes over
    }
    const shared = await engine.acquire({ ...target, mode: 'shared', owner: 'reader' });
    tokens.push(BigInt(shared.fencingToken));
    expect([...tokens].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(tokens);
    expect(new Set(tokens).size).toBe(tokens.length);
    await engine.release({ leaseToken: shared.leaseToken });
  });
});

describe('the sweeper', () => {
  it('removes expired locks and expired shared holders, and leaves live ones', async () => {
    const namespace = 'sweep-basic';
    // In a namespace of their own: the global lock is the root above a namespace's ids, and a reader of it excludes their writers.
    await engine.acquire({ namespace: `${namespace}-ids`, granularity: 'document', ids: ['gone-1', 'gone-2'], owner: 'dead', ttlMs: 1_000 });
    await engine.acquire({ namespace, granularity: 'global', mode: 'shared', owner: 'dead-reader', ttlMs: 1_000 });
    const live = await engine.acquire({ namespace, granularity: 'global', mode: 'shared', owner: 'live-reader', ttlMs: 60_000 });
    await sleep(1_100);
    await client.indices.refresh({ index });
    const report = await engine.sweep();
    expect(report).toMatchObject({ deletedLocks: 2, prunedHolders: 3, conflicts: 0 });
    expect(await engine.inspect({ namespace: `${namespace}-ids`, granularity: 'document', ids: ['gone-1', 'gone-2'] })).toEqual([]);
    const [global] = await engine.inspect({ namespace, granularity: 'global' });
    expect(global?.holders.map((holder) => holder.owner)).toEqual(['live-reader']);
    await engine.release({ leaseToken: live.leaseToken });
  });

  it('never removes a lock renewed while it ran', async () => {
    const namespace = 'sweep-race';
    const grant = await engine.acquire({ namespace, granularity: 'global', owner: 'slow-but-alive', ttlMs: 2_000 });
    await client.indices.refresh({ index });
    // The sweeper has read the expired lock (its search sees the refreshed, expired version)...
    const store = new ElasticsearchLockStore(client, index);
    const racing: LockStore = {
      read: (ids) => store.read(ids),
      readPrimary: (ids) => store.readPrimary(ids),
      list: (query) => store.list(query),
      findLiveBelow: (query) => store.findLiveBelow(query),
      writeThenRead: (ops, ids) => store.writeThenRead(ops, ids),
      findExpired: async (before, size, after) => {
        const page = await store.findExpired(before, size, after);
        // ...and the holder renews before the sweeper's delete lands.
        await engine.renew({ leaseToken: grant.leaseToken, ttlMs: 30_000 });
        return page;
      },
      write: (ops: readonly WriteOp[]) => store.write(ops),
    };
    // The sweeper's clock runs ahead, so it sees the lease over while the holder (a lease that has run
    // out is never renewed) may still renew it.
    const report = await new LockService(racing, { maxClockSkewMs: 50, now: () => Date.now() + 3_000 }).sweep();
    expect(report.conflicts).toBeGreaterThanOrEqual(1);
    const [state] = await engine.inspect({ namespace, granularity: 'global' });
    expect(state?.holders).toMatchObject([{ owner: 'slow-but-alive', expired: false }]);
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('works in bounded batches', async () => {
    const namespace = 'sweep-batches';
    await engine.acquire({ namespace, granularity: 'document', ids: Array.from({ length: 25 }, (_, i) => `b-${i}`), owner: 'dead', ttlMs: 1_000 });
    await sleep(1_100);
    await client.indices.refresh({ index });
    const first = await engine.sweep({ batchSize: 10, maxBatches: 2 });
    expect(first.batches).toBe(2);
    expect(first.deletedLocks).toBe(20);
    await client.indices.refresh({ index });
    const rest = await engine.sweep({ batchSize: 10 });
    expect(rest.deletedLocks).toBe(5);
  });
});

describe('when Elasticsearch is down or fails mid-write', () => {
  it('acquire, renew and release give a retryable StoreUnavailableError, never an answer', async () => {
    // Nothing listens on port 1: a real refused connection.
    const down = createElasticsearchClient({ url: 'http://127.0.0.1:1', requestTimeoutMs: 1_000 });
    const offline = engineOn(down, index);
    const grant = await engine.acquire({ namespace: 'down', granularity: 'global', owner: 'ok' });
    for (const call of [
      () => offline.acquire({ namespace: 'down', granularity: 'document', ids: ['x'], owner: 'o' }),
      () => offline.acquire({ namespace: 'down', granularity: 'tree', path: '/a/b', owner: 'o' }),
      () => offline.renew({ leaseToken: grant.leaseToken }),
      () => offline.release({ leaseToken: grant.leaseToken }),
    ]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as StoreUnavailableError).retryable).toBe(true);
    }
    await down.close();
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
  });

  it('a write whose answer is lost is resolved by reading back: one grant, never a conflict with itself', async () => {
    // Simulated fault (a lost response cannot be produced on demand against a real node): the store
    // applies the first write for real and then throws as if the connection dropped.
    const store = new ElasticsearchLockStore(client, index);
    let dropped = 0;
    const lossy: LockStore = {
      read: (ids) => store.read(ids),
      readPrimary: (ids) => store.readPrimary(ids),
      list: (query) => store.list(query),
      findLiveBelow: (query) => store.findLiveBelow(query),
      writeThenRead: (ops, ids) => store.writeThenRead(ops, ids),
      findExpired: (before, size, after) => store.findExpired(before, size, after),
      write: async (ops) => {
        const outcomes = await store.write(ops);
        if (dropped++ === 0) throw new StoreUnavailableError({ operation: 'write', ambiguous: true }, 'socket hang up (simulated)');
        return outcomes;
      },
    };
    const flaky = new LockService(lossy, { maxClockSkewMs: 50 });
    const grant = await flaky.acquire({ namespace: 'lost-answer', granularity: 'document', ids: ['a', 'b', 'c'], owner: 'pipeline' });
    expect(grant.reused).toBe(false); // its own write, found by reading back: not another call's grant
    const states = await engine.inspect({ namespace: 'lost-answer', granularity: 'document', ids: ['a', 'b', 'c'] });
    expect(states.map((state) => state.holders.length)).toEqual([1, 1, 1]);
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
  });

  it('a lease lost during a pause is reported as lost, not silently renewed', async () => {
    const grant = await engine.acquire({ namespace: 'paused', granularity: 'global', owner: 'paused', ttlMs: 1_000 });
    await sleep(1_100);
    const taker = await engine.acquire({ namespace: 'paused', granularity: 'global', owner: 'taker' });
    const lost = (await engine.renew({ leaseToken: grant.leaseToken }).catch((error: unknown) => error)) as LeaseLostError;
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost.lostKeys).toEqual(['*']);
    expect(BigInt(taker.fencingToken)).toBeGreaterThan(BigInt(grant.fencingToken));
    await engine.release({ leaseToken: taker.leaseToken });
  });
});
