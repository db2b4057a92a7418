/**
 * Incarnations of the lock index and their fencing epochs, on the real node: a deleted and re-created
 * lock index, or one restored from a snapshot and adopted, issues tokens above every earlier token.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveTicketsError, liveTickets, recreateLockIndex } from '../../functions/store/change-incarnation.js';
import { isIncarnationOf } from '../../functions/store/incarnation.js';
import {
  adoptLockIndex,
  deleteLockIndex,
  ElasticsearchLockStore,
  ensureLockIndex,
  epochHistory,
  epochOfIncarnation,
  IncarnationEpochError,
  incarnationName,
  lockIndexIncarnation,
  REGISTRY_INDEX,
} from '../../functions/store/index.js';
import { LOCK_INDEX_DEFINITION } from '../../functions/store/lock-index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { readSharedSettings } from '../../functions/store/shared-settings.js';
import type { Grant } from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { LockStore, StoredLock, WriteOp } from '../../packages/engine/src/store.js';
import type { WakeNotifier } from '../../packages/engine/src/wake.js';
import { closeTestClient, testClient } from '../support/engine.js';

let client: SearchClient;
/** A registry of this file's own: the tests delete it, which must not touch the node's shared one. */
const registry = `.locks-test-incarnations-${randomBytes(4).toString('hex')}`;
const aliases: string[] = [];
const newAlias = (label: string): string => {
  const alias = `locks-test-inc-${label}-${randomBytes(4).toString('hex')}`;
  aliases.push(alias);
  return alias;
};
// No clock-skew allowance of their own: each takes the one its lock index records (the default, here).
const engineOn = (alias: string) => new LockService(new ElasticsearchLockStore(client, alias));
const epochOfToken = (token: string): number => Number(BigInt(token) / 10n ** 16n);
const largest = (tokens: string[]): bigint => tokens.map((token) => BigInt(token)).reduce((a, b) => (a > b ? a : b));
/** The concrete indices named `name` (or behind it) or `name-*`. */
const indicesOf = async (name: string): Promise<string[]> =>
  Object.keys(await client.indices.get({ index: [name, `${name}-*`], expand_wildcards: 'all', ignore_unavailable: true, allow_no_indices: true }));

beforeAll(() => {
  client = testClient();
});
afterAll(async () => {
  for (const alias of aliases) {
    const left = await indicesOf(alias);
    if (left.length > 0) await client.indices.delete({ index: left }, { ignore: [404] });
  }
  await client.indices.delete({ index: registry }, { ignore: [404] });
  await closeTestClient(client);
});

describe('incarnation names', () => {
  it('carry the epoch, which epochOfIncarnation reads back; names from before epochs are epoch 0', () => {
    const name = incarnationName('locks', 7, new Date('2026-11-22T10:00:00Z'));
    expect(name).toMatch(/^locks-e007-20261122-[0-9a-f]{8}$/);
    expect(epochOfIncarnation(name)).toBe(7);
    expect(epochOfIncarnation('locks-20261122-3fa9c1d2')).toBe(0);
    expect(epochOfIncarnation(name)).toBe(7);
    expect(epochOfIncarnation('locks-e012-e921-20261122-3fa9c1d2')).toBe(921);
    expect(epochOfIncarnation('locks')).toBe(0);
    expect(isIncarnationOf('locks', name)).toBe(true);
    expect(isIncarnationOf('locks', 'locks-20261122-3fa9c1d2')).toBe(true);
    expect(isIncarnationOf('locks', 'locks-orders-e001-20261122-3fa9c1d2')).toBe(false);
    expect(() => incarnationName('locks', 0)).toThrow(RangeError);
    expect(() => incarnationName('locks', 922)).toThrow(RangeError);
  });

  it('the registry cannot be taken for a lock index or an incarnation of one', () => {
    expect(REGISTRY_INDEX.startsWith('.')).toBe(true);
    expect(/^[a-z0-9]/.test(REGISTRY_INDEX)).toBe(false);
  });
});

describe('a deleted and re-created lock index', () => {
  it('issues fencing tokens above every token of the earlier incarnation (they restarted before epochs)', async () => {
    const alias = newAlias('recreate');
    expect(await ensureLockIndex(client, alias, { registry })).toBe('created');
    const engine = engineOn(alias);
    const before: string[] = [];
    for (let round = 0; round < 5; round++) {
      const grant = await engine.acquire({ namespace: 'orders', granularity: 'document', ids: [`o-${round}`], owner: 'before', ttlMs: 60_000 });
      before.push(grant.fencingToken);
    }
    const first = (await lockIndexIncarnation(client, alias))!;
    expect(epochOfIncarnation(first)).toBe(1);
    expect(before.every((token) => epochOfToken(token) === 1)).toBe(true);

    await deleteLockIndex(client, alias);
    expect(await ensureLockIndex(client, alias, { registry })).toBe('created');
    const second = (await lockIndexIncarnation(client, alias))!;
    expect(second).not.toBe(first);
    expect(epochOfIncarnation(second)).toBe(2);

    const after = await engine.acquire({ namespace: 'orders', granularity: 'document', ids: ['o-0'], owner: 'after', ttlMs: 60_000 });
    expect(epochOfToken(after.fencingToken)).toBe(2);
    expect(BigInt(after.fencingToken)).toBeGreaterThan(largest(before));
    // Without the epoch the new incarnation's sequence numbers restart: the same write would have had a smaller token.
    expect(BigInt(after.fencingToken) % 10n ** 16n).toBeLessThan(largest(before) % 10n ** 16n);
  });

  it('concurrent creators make one incarnation, with an epoch no earlier incarnation had', async () => {
    const alias = newAlias('race');
    const fresh = await Promise.all(Array.from({ length: 4 }, () => ensureLockIndex(client, alias, { registry })));
    expect(fresh.filter((outcome) => outcome === 'created')).toHaveLength(1);
    await deleteLockIndex(client, alias);
    const again = await Promise.all(Array.from({ length: 4 }, () => ensureLockIndex(client, alias, { registry })));
    expect(again.filter((outcome) => outcome === 'created')).toHaveLength(1);

    const behind = Object.keys(await client.indices.getAlias({ name: alias }));
    expect(behind).toHaveLength(1);
    expect(await indicesOf(alias)).toEqual(behind);
    const history = await epochHistory(client, alias, { registry });
    const epochs = history.records.map((record) => record.epoch);
    expect(new Set(epochs).size).toBe(epochs.length);
    expect(epochOfIncarnation(behind[0]!)).toBe(Math.max(...epochs));
    expect(epochOfIncarnation(behind[0]!)).toBeGreaterThanOrEqual(2);
    expect(history.records.find((record) => record.epoch === epochOfIncarnation(behind[0]!))?.index).toBe(behind[0]);
  });
});

/** The real store, with a pause before its writes: a caller that read, then stalled while the index was re-created. */
class PausingStore implements LockStore {
  pause?: () => Promise<void>;
  constructor(private readonly inner: ElasticsearchLockStore) {}
  read = (docIds: readonly string[]) => this.inner.read(docIds);
  readPrimary = (docIds: readonly string[]) => this.inner.readPrimary(docIds);
  findExpired = (before: number, size: number, after?: unknown) => this.inner.findExpired(before, size, after);
  list = (query: Parameters<LockStore['list']>[0]) => this.inner.list(query);
  findLiveBelow = (query: Parameters<LockStore['findLiveBelow']>[0]) => this.inner.findLiveBelow(query);
  async write(ops: readonly WriteOp[]) {
    await this.paused();
    return this.inner.write(ops);
  }
  async writeThenRead(ops: readonly WriteOp[], docIds: readonly string[]) {
    await this.paused();
    return this.inner.writeThenRead(ops, docIds);
  }
  private async paused(): Promise<void> {
    const pause = this.pause;
    this.pause = undefined;
    await pause?.();
  }
}

describe('a write decided on a read from the previous incarnation', () => {
  // fails on main before pinning: the renewal's replace went through the alias, matched the new
  // holder's document on its (seq_no 0, term 1), and wrote the stalled holder over it.
  it("never lands on the new incarnation's document with the same (seq_no, term); the empty index it may leave is the sweeper's to remove", async () => {
    const alias = newAlias('pinned');
    await ensureLockIndex(client, alias, { registry });
    const store = new PausingStore(new ElasticsearchLockStore(client, alias));
    const stalled = new LockService(store);
    const lock = { namespace: 'orders', granularity: 'document' as const, ids: ['o-1'] };
    const old = await stalled.acquire({ ...lock, owner: 'old', ttlMs: 60_000 });
    const first = (await lockIndexIncarnation(client, alias))!;
    const docId = 'orders|d|o-1';
    const read = (await store.read([docId])).get(docId)!;

    let renewed: StoredLock | undefined;
    store.pause = async () => {
      // While the renewal stalls between its read and its write: the index is re-created, and the key granted anew.
      await deleteLockIndex(client, alias);
      await ensureLockIndex(client, alias, { registry });
      await engineOn(alias).acquire({ ...lock, owner: 'new', ttlMs: 60_000 });
      renewed = (await store.read([docId])).get(docId)!;
    };
    await expect(stalled.renew({ leaseToken: old.leaseToken, ttlMs: 60_000 })).rejects.toMatchObject({ name: 'LeaseLostError' });
    expect([renewed!.seqNo, renewed!.primaryTerm]).toEqual([read.seqNo, read.primaryTerm]);
    expect(renewed!.index).not.toBe(read.index);

    const [state] = await engineOn(alias).inspect(lock);
    expect(state?.holders.map((holder) => holder.owner)).toEqual(['new']);
    // The write, sent to its incarnation without a look at the alias, may have made the cluster
    // auto-create an empty index of that name (this node does): nothing was written there.
    await strayIsEmptyThenSwept(alias, first);
  });
});

/**
 * `gone`, the name of a deleted incarnation, is absent, or an empty index outside the alias that
 * the sweep removes; after it, only the incarnation behind the alias is left.
 */
async function strayIsEmptyThenSwept(alias: string, gone: string): Promise<void> {
  if (await client.indices.exists({ index: gone })) {
    expect((await client.count({ index: gone })).count).toBe(0);
    expect(await client.indices.existsAlias({ index: gone, name: alias })).toBe(false);
  }
  await engineOn(alias).sweep();
  expect(await client.indices.exists({ index: gone })).toBe(false);
  expect(await indicesOf(alias)).toEqual([(await lockIndexIncarnation(client, alias))!]);
}

describe('a renewal in place (signed tokens) racing a new incarnation', () => {
  const signedOn = (alias: string, searchClient: SearchClient = client) =>
    new LockService(new ElasticsearchLockStore(searchClient, alias), { tokenSigningKey: Buffer.alloc(32, 9) });

  // The renewal's one request is a write at the version the token noted, in the incarnation it noted:
  // after a re-creation that version names the new holder's document in the new incarnation.
  it('after a re-creation is LeaseLostError, never lands in the new incarnation, and leaves nothing the sweep does not remove', async () => {
    const alias = newAlias('inplace-recreate');
    await ensureLockIndex(client, alias, { registry });
    const { client: stalling, stall } = stallingBeforeWrite(client);
    const holder = signedOn(alias, stalling);
    const lock = { namespace: 'orders', granularity: 'document' as const, ids: ['o-2'] };
    const held = await holder.acquire({ ...lock, owner: 'old', ttlMs: 60_000 });
    const first = (await lockIndexIncarnation(client, alias))!;
    let rival: Grant | undefined;
    stall(async () => {
      await deleteLockIndex(client, alias);
      await ensureLockIndex(client, alias, { registry });
      rival = await signedOn(alias).acquire({ ...lock, owner: 'new', ttlMs: 60_000 });
    });
    await expect(holder.renew({ leaseToken: held.leaseToken, ttlMs: 60_000 })).rejects.toMatchObject({ name: 'LeaseLostError' });
    const [state] = await engineOn(alias).inspect(lock);
    expect(state?.holders).toEqual([expect.objectContaining({ owner: 'new', expiresAt: rival!.expiresAt, fencingToken: rival!.fencingToken })]);
    await strayIsEmptyThenSwept(alias, first);
  });

  // The incarnation left is write-blocked before the alias moves: the write there is refused, and the
  // renewal goes on from the adopted copy as the same request read it, where the holder carries on.
  it('after an adoption renews the holder in the adopted copy, never in the incarnation left', async () => {
    const alias = newAlias('inplace-adopt');
    await ensureLockIndex(client, alias, { registry });
    const { client: stalling, stall } = stallingBeforeWrite(client);
    const holder = signedOn(alias, stalling);
    const lock = { namespace: 'orders', granularity: 'document' as const, ids: ['o-3'] };
    const held = await holder.acquire({ ...lock, owner: 'holder', ttlMs: 60_000 });
    const first = (await lockIndexIncarnation(client, alias))!;
    // A snapshot of it taken now, restored under another name: the holder is in it.
    const restored = `restored-inplace-${randomBytes(4).toString('hex')}`;
    aliases.push(restored);
    await client.indices.addBlock({ index: first, block: 'write' });
    await client.indices.clone({ index: first, target: restored, settings: { 'index.blocks.write': false }, wait_for_active_shards: 1 });
    await client.indices.putSettings({ index: first, settings: { 'index.blocks.write': false } });
    stall(async () => {
      await adoptLockIndex(client, alias, restored, { registry });
    });
    const renewal = await holder.renew({ leaseToken: held.leaseToken, ttlMs: 90_000 });
    const adopted = (await lockIndexIncarnation(client, alias))!;
    expect(adopted).not.toBe(first);
    const [state] = await engineOn(alias).inspect(lock);
    expect(state?.holders).toEqual([expect.objectContaining({ owner: 'holder', expiresAt: renewal.expiresAt })]);
    // Never below the one it was granted. (A fence still pending when the index was copied is fixed by
    // the copy's version, of the next epoch, as a renewal that reads fixes it: adoption's, not this path's.)
    expect(BigInt(renewal.fencingToken)).toBeGreaterThanOrEqual(BigInt(held.fencingToken));
    // The incarnation left kept the holder as granted: the write sent there was refused.
    expect(
      (await client.get<{ holders: Array<{ expiresAt: number }> }>({ index: first, id: 'orders|d|o-3', routing: 'orders' }))._source?.holders[0]?.expiresAt,
    ).toBe(held.expiresAt);
    // The next renewal is in place again, in the adopted copy: one request.
    const counted: string[] = [];
    const listener = (_: unknown, event: { meta?: { request?: { params?: { path?: unknown } } } } | null) => {
      const path = event?.meta?.request?.params?.path;
      if (typeof path === 'string') counted.push(path);
    };
    client.diagnostic.on('request', listener);
    try {
      await holder.renew({ leaseToken: renewal.leaseToken, ttlMs: 90_000 });
    } finally {
      client.diagnostic.off('request', listener);
    }
    expect(counted).toEqual([`/${alias}/_bulk`]);
  });
});

describe('the sweep removes strays', () => {
  it('only an empty index named like an earlier incarnation, outside the alias, that maps as no lock index does', async () => {
    const alias = newAlias('strays');
    await ensureLockIndex(client, alias, { registry });
    const current = (await lockIndexIncarnation(client, alias))!;
    const epoch = epochOfIncarnation(current);
    // What a late write leaves: an empty index, mapped dynamically, under an earlier incarnation's name.
    // (Named as incarnations were before epochs: epoch 0, below the current one's.)
    const stray = `${alias}-20260102-0000cafe`;
    await client.indices.create({ index: stray });
    // Not strays: a later incarnation being made (empty), an earlier one with the lock mapping (a
    // restored copy awaiting adoption, empty), and an earlier one, mapped dynamically, with a document.
    const next = incarnationName(alias, epoch + 1);
    await client.indices.create({ index: next });
    const restored = `${alias}-20260103-0000f00d`;
    await client.indices.create({ index: restored, mappings: LOCK_INDEX_DEFINITION.mappings as never });
    const kept = `${alias}-20260101-0000beef`;
    await client.index({ index: kept, id: 'x', document: { any: 'thing' }, refresh: true });
    await engineOn(alias).sweep();
    expect((await indicesOf(alias)).sort()).toEqual([current, next, restored, kept].sort());
  });
});

describe('making the next incarnation (index:create --recreate)', () => {
  it('refuses while the current one holds live tickets, naming how many and until when; forced, it drops them', async () => {
    const alias = newAlias('tickets');
    await ensureLockIndex(client, alias, { registry });
    // What is tested is the index operation: a channel that takes every message is enough.
    const notifier: WakeNotifier = { notify: async () => 'delivered' };
    const engine = new LockService(new ElasticsearchLockStore(client, alias), { notifier });
    const lock = { namespace: 'jobs', granularity: 'document' as const, ids: ['nightly'] };
    await engine.acquire({ ...lock, owner: 'holder', ttlMs: 60_000 });
    const queued = await engine.acquireOrQueue({
      ...lock,
      owner: 'pipeline',
      ttlMs: 60_000,
      requestId: 'request-nightly',
      wake: { queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/nightly' },
      queueTtlMs: 600_000,
    });
    expect(queued).toMatchObject({ ticket: expect.any(String) });
    const first = (await lockIndexIncarnation(client, alias))!;

    const counted = (await liveTickets(client, alias))!;
    expect(counted).toMatchObject({ incarnation: first, tickets: 1, locks: 1, withWake: 1 });
    expect(counted.until).toBeGreaterThan(Date.now() + 500_000);
    const refused = await recreateLockIndex(client, alias, { registry }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LiveTicketsError);
    expect((refused as Error).message).toContain('1 live ticket');
    expect((refused as Error).message).toContain(new Date(counted.until).toISOString());
    expect(await lockIndexIncarnation(client, alias)).toBe(first);
    // A ticket that has run out holds nothing back.
    expect((await liveTickets(client, alias, counted.until + 1))?.tickets).toBe(0);

    const made = await recreateLockIndex(client, alias, { registry, force: true });
    expect(made).toMatchObject({ previous: first, dropped: 1, epoch: 2 });
    expect(await lockIndexIncarnation(client, alias)).toBe(made.index);
    expect(await client.indices.exists({ index: first })).toBe(false);
    expect((await liveTickets(client, alias))?.tickets).toBe(0);
    // Nothing queued: the next incarnation needs no force.
    expect(await recreateLockIndex(client, alias, { registry })).toMatchObject({ previous: made.index, dropped: 0, epoch: 3 });
  });
});

/**
 * The real client with a hook run once right before the next write request (an index, a delete or a
 * bulk): after the store's look at the alias, before its write is sent. A real node cannot stall a
 * caller between the two on demand; the hook is that stall, and what it does runs on the real node.
 */
function stallingBeforeWrite(real: SearchClient): { client: SearchClient; stall: (hook: () => Promise<void>) => void } {
  let pending: (() => Promise<void>) | undefined;
  const client = new Proxy(real, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'index' && property !== 'bulk' && property !== 'delete') return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        const hook = pending;
        pending = undefined;
        await hook?.();
        return (value as (...params: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
  return {
    client,
    stall: (hook) => {
      pending = hook;
    },
  };
}

describe('adoption closes the incarnation the alias leaves', () => {
  /** A lock index with `held` granted in its first incarnation, and a restored index (empty: a snapshot from before that grant). */
  async function adoptionScene(label: string) {
    const alias = newAlias(label);
    await ensureLockIndex(client, alias, { registry });
    const restored = `restored-${label}-${randomBytes(4).toString('hex')}`;
    aliases.push(restored);
    await client.indices.create({ index: restored, mappings: LOCK_INDEX_DEFINITION.mappings as never });
    const { client: stalling, stall } = stallingBeforeWrite(client);
    return {
      alias,
      restored,
      stalled: new LockService(new ElasticsearchLockStore(stalling, alias)),
      stall,
      first: (await lockIndexIncarnation(client, alias))!,
    };
  }

  // fails on main: the detached incarnation stayed writable, and the renewal was answered (an epoch-1
  // token) after the key was granted in the adopted copy (epoch 2).
  it('a renewal whose alias look came before the move and whose write lands after it is LeaseLostError, never a renewal', async () => {
    const { alias, restored, stalled, stall, first } = await adoptionScene('adopt-renew');
    const lock = { namespace: 'jobs', granularity: 'document' as const, ids: ['k'] };
    const held = await stalled.acquire({ ...lock, owner: 'holder', ttlMs: 60_000 });
    let rival: Grant | undefined;
    stall(async () => {
      await adoptLockIndex(client, alias, restored, { registry });
      rival = await engineOn(alias).acquire({ ...lock, owner: 'rival', ttlMs: 60_000 });
    });
    const renewal = await stalled.renew({ leaseToken: held.leaseToken, ttlMs: 60_000 }).catch((error: unknown) => error);
    expect(renewal).toMatchObject({ name: 'LeaseLostError' });
    expect(epochOfToken(rival!.fencingToken)).toBe(2);
    const [state] = await engineOn(alias).inspect(lock);
    expect(state?.holders.map((holder) => holder.owner)).toEqual(['rival']);
    // The incarnation left is closed: its copy of the lock is the holder's as granted, the renewal never landed there.
    expect(
      (await client.get<{ holders: Array<{ expiresAt: number }> }>({ index: first, id: 'jobs|d|k', routing: 'jobs' }))._source?.holders[0]?.expiresAt,
    ).toBe(held.expiresAt);
  });
});

describe('re-creation keeps the completion records', () => {
  // fails on main: the record was dropped with the incarnation, and the redelivery was granted the work again.
  it('carries unexpired outcomes over (claims dropped), closes the incarnation it leaves, and keeps its shared settings', async () => {
    const alias = newAlias('records');
    await ensureLockIndex(client, alias, { registry, sharedSettings: { maxClockSkewMs: 700 } });
    const engine = engineOn(alias);
    const work = (key: string, owner: string) => ({ namespace: 'jobs', granularity: 'document', ids: [`j-${key}`], owner, idempotencyKey: key, ttlMs: 60_000 });
    const done = (await engine.acquireWork(work('done', 'first'))) as Grant;
    await engine.release({ leaseToken: done.leaseToken, record: { status: 'completed', result: { rows: 3 }, ttlMs: 86_400_000 } });
    // Taken on, never recorded: its claim names a lease the next incarnation does not have.
    await engine.acquireWork(work('claimed', 'taker'));
    const first = (await lockIndexIncarnation(client, alias))!;

    const made = await recreateLockIndex(client, alias, { registry, force: true });
    const redelivered = await engine.acquireWork(work('done', 'redelivery'));
    expect(redelivered).toMatchObject({ status: 'completed', result: { rows: 3 }, owner: 'first' });
    // The claim did not come along: the work is open in the new incarnation.
    const retaken = await engine.acquireWork(work('claimed', 'next'));
    expect(retaken).toMatchObject({ leaseToken: expect.any(String) });

    expect(made).toMatchObject({ previous: first, carried: 1, sharedSettings: { maxClockSkewMs: 700 } });
    expect(await client.indices.exists({ index: first })).toBe(false);
    expect(await readSharedSettings(client, alias)).toEqual({ maxClockSkewMs: 700 });
  });
});

describe('when nothing records an earlier incarnation', () => {
  it('refuses on request (index:create) unless told the epoch, and never goes below a known one', async () => {
    const alias = newAlias('unknown');
    const refused = await ensureLockIndex(client, alias, { registry, unknownHistory: 'refuse' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(IncarnationEpochError);
    expect(refused).toMatchObject({ reason: 'unknown', context: { alias, registry } });
    expect(await client.indices.existsAlias({ name: alias })).toBe(false);

    expect(await ensureLockIndex(client, alias, { registry, unknownHistory: 'refuse', epoch: 7 })).toBe('created');
    expect(epochOfIncarnation((await lockIndexIncarnation(client, alias))!)).toBe(7);
    await deleteLockIndex(client, alias);
    // The registry remembers epoch 7: the next incarnation continues above it, and an epoch at or below it is refused.
    await expect(ensureLockIndex(client, alias, { registry, epoch: 7 })).rejects.toMatchObject({ reason: 'too-low', context: { largest: 7 } });
    expect(await ensureLockIndex(client, alias, { registry, unknownHistory: 'refuse' })).toBe('created');
    expect(epochOfIncarnation((await lockIndexIncarnation(client, alias))!)).toBe(8);

    // The registry and the lock index both gone: unknown again.
    await deleteLockIndex(client, alias);
    await client.indices.delete({ index: registry });
    await expect(ensureLockIndex(client, alias, { registry, unknownHistory: 'refuse' })).rejects.toMatchObject({ reason: 'unknown' });
  });

  it('an incarnation left in the cluster (not behind the alias) is history too', async () => {
    const alias = newAlias('orphan');
    const orphan = incarnationName(alias, 4);
    await client.indices.create({ index: orphan, mappings: { properties: { namespace: { type: 'keyword' } } } });
    expect(await ensureLockIndex(client, alias, { registry, unknownHistory: 'refuse' })).toBe('created');
    expect(epochOfIncarnation((await lockIndexIncarnation(client, alias))!)).toBe(5);
  });
});

describe('a lock index restored from a snapshot, adopted', () => {
  it('becomes a new incarnation: old holders stay, new grants carry tokens above every token issued before', async () => {
    const alias = newAlias('adopt');
    await ensureLockIndex(client, alias, { registry });
    const engine = engineOn(alias);
    // The global locks go to a namespace of their own: a global lock may wait for the document locks of its namespace.
    const held = await engine.acquire({ namespace: 'jobs', granularity: 'document', ids: ['held'], owner: 'old-holder', ttlMs: 600_000 });
    const tokens = [held.fencingToken];
    for (let round = 0; round < 3; round++) {
      const grant = await engine.acquire({ namespace: 'beat', granularity: 'global', owner: `g-${round}`, ttlMs: 1_000 });
      tokens.push(grant.fencingToken);
      await engine.release({ leaseToken: grant.leaseToken });
    }

    // The snapshot: what a restore under another name brings back (a clone of the incarnation as it is now).
    const original = (await lockIndexIncarnation(client, alias))!;
    const restored = `restored-${original}`;
    aliases.push(restored);
    await client.indices.addBlock({ index: original, block: 'write' });
    await client.indices.clone({ index: original, target: restored, settings: { 'index.blocks.write': false } });
    await client.indices.putSettings({ index: original, settings: { 'index.blocks.write': false } });
    // After the snapshot the lock index goes on (tokens downstream has seen), then is lost and re-created empty meanwhile.
    for (let round = 0; round < 3; round++) {
      const grant = await engine.acquire({ namespace: 'beat', granularity: 'global', owner: `late-${round}`, ttlMs: 1_000 });
      tokens.push(grant.fencingToken);
      await engine.release({ leaseToken: grant.leaseToken });
    }
    await deleteLockIndex(client, alias);
    await ensureLockIndex(client, alias, { registry });
    tokens.push((await engine.acquire({ namespace: 'jobs', granularity: 'document', ids: ['interim'], owner: 'interim', ttlMs: 60_000 })).fencingToken);
    const interim = (await lockIndexIncarnation(client, alias))!;

    const adopted = await adoptLockIndex(client, alias, restored, { registry });
    expect(adopted.epoch).toBe(3);
    expect(epochOfIncarnation(adopted.index)).toBe(3);
    expect(adopted.detached).toEqual([interim]);
    expect(Object.keys(await client.indices.getAlias({ name: alias }))).toEqual([adopted.index]);
    expect((await client.indices.getAlias({ name: alias }))[adopted.index]?.aliases[alias]?.is_write_index).toBe(true);
    expect(await client.indices.exists({ index: restored })).toBe(false);
    const record = (await epochHistory(client, alias, { registry })).records.find((entry) => entry.epoch === 3);
    expect(record).toMatchObject({ index: adopted.index, origin: 'adopted', adoptedFrom: restored });

    // The holders of the snapshot are there; the interim one is not. A holder whose document was not
    // written after its grant has its token computed from that write's (seq_no, term), which the copy
    // keeps, and the copy's epoch: it reads as a token of the new incarnation, still below every new grant.
    const [state] = await engine.inspect({ namespace: 'jobs', granularity: 'document', ids: ['held'] });
    expect(state?.holders).toEqual([expect.objectContaining({ owner: 'old-holder' })]);
    const oldHolderToken = state!.holders[0]!.fencingToken;
    expect(BigInt(oldHolderToken) % 10n ** 16n).toBe(BigInt(held.fencingToken) % 10n ** 16n);
    expect(await engine.inspect({ namespace: 'jobs', granularity: 'document', ids: ['interim'] })).toEqual([]);
    await expect(engine.acquire({ namespace: 'jobs', granularity: 'document', ids: ['held'], owner: 'intruder', ttlMs: 1_000 })).rejects.toMatchObject({
      name: 'LockHeldError',
    });
    // The old holder carries on in the copy, and gives the lock up.
    await engine.renew({ leaseToken: held.leaseToken, ttlMs: 60_000 });
    expect((await engine.release({ leaseToken: held.leaseToken })).outcome).toBe('released');

    const fresh = await engine.acquire({ namespace: 'beat', granularity: 'global', owner: 'after-restore', ttlMs: 1_000 });
    expect(epochOfToken(fresh.fencingToken)).toBe(3);
    expect(BigInt(fresh.fencingToken)).toBeGreaterThan(largest(tokens));
    const retaken = await engine.acquire({ namespace: 'jobs', granularity: 'document', ids: ['held'], owner: 'next', ttlMs: 1_000 });
    expect(BigInt(retaken.fencingToken)).toBeGreaterThan(largest([...tokens, oldHolderToken]));
  });

  it('adopting the index behind the alias itself moves the live lock index to a new epoch, its holders with it', async () => {
    const alias = newAlias('in-place');
    await ensureLockIndex(client, alias, { registry });
    const engine = engineOn(alias);
    const held = await engine.acquire({ namespace: 'jobs', granularity: 'global', owner: 'holder', ttlMs: 60_000 });
    const live = (await lockIndexIncarnation(client, alias))!;
    const adopted = await adoptLockIndex(client, alias, live, { registry });
    expect(adopted).toMatchObject({ epoch: 2, detached: [] });
    expect(await client.indices.exists({ index: live })).toBe(false);
    expect(await lockIndexIncarnation(client, alias)).toBe(adopted.index);
    await engine.renew({ leaseToken: held.leaseToken });
    expect((await engine.release({ leaseToken: held.leaseToken })).outcome).toBe('released');
    const next = await engine.acquire({ namespace: 'jobs', granularity: 'global', owner: 'next', ttlMs: 1_000 });
    expect(epochOfToken(next.fencingToken)).toBe(2);
    expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));
  });

  it('refuses an index that is not a lock index, and needs an epoch when the registry knows nothing of the alias', async () => {
    const alias = newAlias('adopt-refused');
    const stranger = `${alias}-stranger`;
    aliases.push(stranger);
    await client.indices.create({ index: stranger, mappings: { properties: { title: { type: 'text' } } } });
    await expect(adoptLockIndex(client, alias, stranger, { registry })).rejects.toThrow(/not a lock index/);
    await expect(adoptLockIndex(client, alias, `${alias}-missing`, { registry })).rejects.toThrow(/no index/);

    const restored = `restored-${incarnationName(alias, 2)}`;
    aliases.push(restored);
    await client.indices.create({ index: restored, mappings: LOCK_INDEX_DEFINITION.mappings as never });
    await expect(adoptLockIndex(client, alias, restored, { registry })).rejects.toMatchObject({ reason: 'unknown' });
    await expect(adoptLockIndex(client, alias, restored, { registry, epoch: 2 })).rejects.toMatchObject({ reason: 'too-low' });
    const adopted = await adoptLockIndex(client, alias, restored, { registry, epoch: 9 });
    expect(adopted).toMatchObject({ epoch: 9, detached: [] });
    expect(await lockIndexIncarnation(client, alias)).toBe(adopted.index);
  });
});
