/**
 * What must hold when calls interleave badly or Elasticsearch misbehaves: no grant for a key the call
 * lost, renewals that do not overstate, tokens that cannot act in another incarnation of the index,
 * duplicate deliveries with exactly one holder, losses confirmed by the primary, ambiguous outcomes
 * reported as such, and fencing tokens that stay exact. Every scenario runs on the real node; the
 * interposed store (see its header) only chooses when things happen.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteLockIndex, ElasticsearchLockStore, ensureLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import {
  FencingRangeError,
  LeaseLostError,
  type LockError,
  LockHeldError,
  LockOutcomeUnknownError,
  StoreRejectedError,
  StoreUnavailableError,
} from '../../packages/engine/src/errors.js';
import { compareFencingTokens, fencingToken, MAX_EPOCH, MAX_PRIMARY_TERM } from '../../packages/engine/src/fencing.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import { settleFences } from '../../packages/engine/src/lock-document.js';
import type { Grant, LockTarget } from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { StoredLock } from '../../packages/engine/src/store.js';
import { interpose, type StoreHooks } from '../../tools/shared/interposed-store.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, TEST_SKEW_MS, testClient } from '../support/engine.js';
import { docs, tree } from '../support/targets.js';

const SKEW = 50;
let client: SearchClient;
let index: string;
let engine: LockService;
let store: ElasticsearchLockStore;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'safety');
  engine = engineOn(client, index);
  store = new ElasticsearchLockStore(client, index);
});
afterAll(async () => closeTestClient(client));

/** An engine whose store calls go through `hooks`. */
const over = (hooks: StoreHooks): LockService => new LockService(interpose(store, hooks), { maxClockSkewMs: SKEW });
const failure = (promise: Promise<unknown>): Promise<LockError> =>
  promise.then(
    (value) => {
      throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error as LockError,
  );
/** Live holders per key, by owner. */
async function owners(target: LockTarget, mode: 'exclusive' | 'shared' = 'exclusive'): Promise<Record<string, string[]>> {
  const states = await engine.inspect(target, mode);
  return Object.fromEntries(
    states.map((state) => [
      state.key,
      state.holders
        .filter((holder) => !holder.expired)
        .map((holder) => holder.owner)
        .sort(),
    ]),
  );
}
const lostAnswer = (operation: string) => new StoreUnavailableError({ operation, ambiguous: true }, `${operation}: socket hang up (simulated)`);

describe('a grant is never returned for a key the call may have lost', () => {
  it('a multi-round acquire that stalls past its lease while its first key is taken over fails and keeps nothing', async () => {
    const ns = 'stall-acquire';
    const shared = (owner: string, ids: string[], ttlMs: number) => docs(ns, ids, owner, { mode: 'shared', ttlMs });
    await engine.acquire(shared('neighbour', ['a'], 60_000));
    let taker: Grant | undefined;
    const victim = over({
      write: async (ops, next, call) => {
        // A compatible reader changes a between the victim's read and its first write: b lands, a conflicts.
        if (call === 1) await engine.acquire(shared('passer-by', ['a'], 60_000));
        return next(ops);
      },
      read: async (ids, next, call) => {
        // Before its second round the victim pauses past its lease (GC, a slow network), and a second
        // caller takes b over as expired.
        if (call === 2) {
          await sleep(1_000 + SKEW + 150);
          taker = await engine.acquire(docs(ns, ['b'], 'taker', { ttlMs: 60_000 }));
        }
        return next(ids);
      },
    });
    const error = await failure(victim.acquire(shared('victim', ['a', 'b'], 1_000)));
    expect(error.retryable).toBe(true);
    expect(taker).toBeDefined();
    expect(await owners({ namespace: ns, granularity: 'document', ids: ['a', 'b'] })).toEqual({ a: ['neighbour', 'passer-by'], b: ['taker'] });
  });

  it('a write whose answer arrives after the lease ran out is extended before the grant, never returned stale', async () => {
    const late = over({
      write: async (ops, next, call) => {
        const outcomes = await next(ops);
        if (call === 1) {
          await sleep(1_100);
          throw lostAnswer('create');
        }
        return outcomes;
      },
    });
    const target = docs('late-answer', ['x'], 'slow');
    const grant = await late.acquire({ ...target, ttlMs: 1_000 });
    expect(grant.expiresAt - Date.now()).toBeGreaterThan(500);
    const [state] = await engine.inspect(target);
    expect(state?.holders).toMatchObject([{ owner: 'slow', expiresAt: grant.expiresAt }]);
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
  });
});

describe('renewals', () => {
  it('a renewal that needs two rounds answers the expiry every key got, and nobody gets in before it', async () => {
    const ns = 'renew-rounds';
    const reader = await engine.acquire(docs(ns, ['k2'], 'other-reader', { mode: 'shared', ttlMs: 60_000 }));
    const holder = await engine.acquire(docs(ns, ['k1', 'k2'], 'holder', { mode: 'shared', ttlMs: 10_000 }));
    const renewing = over({
      write: async (ops, next, call) => {
        // The other reader renews k2 between the holder's read and write: k2 needs a second round...
        if (call === 1) await engine.renew({ leaseToken: reader.leaseToken, ttlMs: 60_000 });
        return next(ops);
      },
      read: async (ids, next, call) => {
        // ...which comes a second later.
        if (call === 2) await sleep(1_000);
        return next(ids);
      },
    });
    const renewal = await renewing.renew({ leaseToken: holder.leaseToken, ttlMs: 2_000 });
    const states = await engine.inspect({ namespace: ns, granularity: 'document', ids: ['k1', 'k2'] }, 'shared');
    const stored = states.map((state) => state.holders.find((h) => h.owner === 'holder')!.expiresAt);
    expect(Math.min(...stored)).toBe(renewal.expiresAt);
    await sleep(Math.max(0, renewal.expiresAt - Date.now() - 300));
    for (const id of ['k1', 'k2']) await expect(engine.acquire(docs(ns, [id], 'writer'))).rejects.toBeInstanceOf(LockHeldError);
  });
});

describe('the lock index and its incarnations', () => {
  it('a signed token from before the lock index was re-created releases nothing in the new one', async () => {
    const alias = await freshLockIndex(client, 'incarnation');
    const signingKey = Buffer.alloc(32, 9);
    const before = engineOn(client, alias, { tokenSigningKey: signingKey });
    const stale = await before.acquire(docs('reset', ['x'], 'old-holder'));
    await deleteLockIndex(client, alias);
    await ensureLockIndex(client, alias, { sharedSettings: { maxClockSkewMs: TEST_SKEW_MS } });
    const after = engineOn(client, alias, { tokenSigningKey: signingKey });
    const current = await after.acquire(docs('reset', ['x'], 'new-holder'));
    // Same document, same (seq_no, primary term) in the new incarnation: only the index tells the writes
    // apart, and the fencing token keeps growing through the epoch the new incarnation got.
    expect(BigInt(current.fencingToken) % 10n ** 16n).toBe(BigInt(stale.fencingToken) % 10n ** 16n);
    expect(compareFencingTokens(current.fencingToken, stale.fencingToken)).toBe(1);
    expect((await after.release({ leaseToken: stale.leaseToken })).outcome).toBe('not_held');
    await expect(after.acquire(docs('reset', ['x'], 'third'))).rejects.toBeInstanceOf(LockHeldError);
    expect((await after.release({ leaseToken: current.leaseToken })).outcome).toBe('released');
  });

  it('a deleted lock index is an error naming it and the command that creates it, never silently re-created', async () => {
    const alias = await freshLockIndex(client, 'deleted');
    const locks = engineOn(client, alias);
    const grant = await locks.acquire(docs('gone', ['x'], 'holder'));
    await deleteLockIndex(client, alias);
    for (const call of [
      () => locks.acquire(docs('gone', ['x'], 'next')),
      () => locks.acquire(docs('gone', ['x', 'y'], 'next')),
      () => locks.acquire(tree('gone', '/a/b', 'next', { mode: 'shared' })),
      () => locks.renew({ leaseToken: grant.leaseToken }),
      () => locks.release({ leaseToken: grant.leaseToken }),
      () => locks.inspect({ namespace: 'gone', granularity: 'document', ids: ['x'] }),
      () => locks.inspect({ namespace: 'gone', granularity: 'document', ids: ['x', 'y'] }),
    ]) {
      const error = await failure(call());
      expect(error).toBeInstanceOf(StoreRejectedError);
      expect(error.retryable).toBe(false);
      expect(error.message).toContain(`"${alias}"`);
      expect(error.message).toContain('npm run index:create');
    }
    expect(await client.indices.exists({ index: alias })).toBe(false);
  });
});

describe('requestIds', () => {
  it.each([
    ['one key', ['m'], 2],
    ['several keys, three deliveries', ['a', 'b', 'c', 'd'], 3],
  ])('deliveries of one acquire (%s): at most one can act, and it holds the largest fencing token', async (_, ids, deliveries) => {
    for (let round = 0; round < 15; round++) {
      const request = docs(
        'dupes',
        ids.map((id) => `${id}-${round % 3}`),
        'consumer',
        { requestId: `message-${ids.length}-${round}` },
      );
      const results = await Promise.allSettled(Array.from({ length: deliveries }, () => engine.acquire(request)));
      const grants = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      // A renewal succeeds only while the lease holds every key of the set.
      const alive: Array<{ grant: Grant; leaseToken: string }> = [];
      for (const grant of grants) {
        const renewed = await engine.renew({ leaseToken: grant.leaseToken }).catch((error: unknown) => {
          expect(error).toBeInstanceOf(LeaseLostError);
          return undefined;
        });
        if (renewed) alive.push({ grant, leaseToken: renewed.leaseToken });
      }
      expect(alive.length).toBeLessThanOrEqual(1);
      const tokens = grants.map((grant) => grant.fencingToken);
      expect(new Set(tokens).size).toBe(tokens.length);
      if (alive[0]) {
        expect([...tokens].sort(compareFencingTokens).at(-1)).toBe(alive[0].grant.fencingToken);
        expect((await engine.release({ leaseToken: alive[0].leaseToken })).outcome).toBe('released');
      }
      // A superseded delivery that still holds some keys learns it at renew, and a holder that lost its
      // lease releases it: what it kept is freed. Deliveries that failed must have left nothing.
      for (const grant of grants.filter((candidate) => candidate !== alive[0]?.grant)) {
        expect(['not_held', 'partially_held']).toContain((await engine.release({ leaseToken: grant.leaseToken })).outcome);
      }
      expect(await owners({ namespace: 'dupes', granularity: 'document', ids: request.ids })).toEqual({});
    }
  });

  it('a requestId reused for another, overlapping call is a conflict, not a takeover', async () => {
    const first = await engine.acquire(docs('reuse', ['x', 'y'], 'pipeline', { requestId: 'run-1' }));
    const error = (await failure(engine.acquire(docs('reuse', ['y', 'z'], 'pipeline', { requestId: 'run-1' })))) as LockHeldError;
    expect(error).toBeInstanceOf(LockHeldError);
    expect(error.conflicts).toEqual([expect.objectContaining({ key: 'y', reason: 'request_id_reused' })]);
    // Compatible modes too: two shared calls under one requestId meet on the id they share.
    const reader = await engine.acquire(docs('reuse', ['p', 'q'], 'reader', { mode: 'shared', requestId: 'run-2' }));
    await expect(engine.acquire(docs('reuse', ['q', 's'], 'reader', { mode: 'shared', requestId: 'run-2' }))).rejects.toBeInstanceOf(LockHeldError);
    // The first calls still hold everything; z and /r/b were rolled back.
    expect((await engine.renew({ leaseToken: first.leaseToken })).leaseId).toBe(first.leaseId);
    expect((await engine.renew({ leaseToken: reader.leaseToken })).leaseId).toBe(reader.leaseId);
    expect(await owners({ namespace: 'reuse', granularity: 'document', ids: ['x', 'y', 'z'] })).toEqual({ x: ['pipeline'], y: ['pipeline'] });
    expect(await owners({ namespace: 'reuse', granularity: 'document', ids: ['p', 'q', 's'] }, 'shared')).toEqual({ p: ['reader'], q: ['reader'] });
  });
});

describe('a partitioned copy', () => {
  it('release and renew that read a stale copy confirm "not held" with the primary, and find the live lease', async () => {
    // One node cannot produce a stale copy: the stand-in answers plain reads with what the real node
    // said before the acquire (no document), as a copy cut off from the cluster would; primary reads
    // (the write path, which a cut-off copy refuses) go to the real node.
    const target = docs('partition', ['x', 'y'], 'holder', { ttlMs: 5_000 });
    const docIds = ['x', 'y'].map((id) => lockDocId('partition', 'document', id));
    const before = await store.read(docIds);
    const stale = over({ read: async (ids) => new Map(ids.map((id) => [id, before.get(id) ?? null])) });
    const grant = await engine.acquire(target);
    const renewal = await stale.renew({ leaseToken: grant.leaseToken, ttlMs: 20_000 });
    expect(renewal.expiresAt).toBeGreaterThan(grant.expiresAt);
    expect((await stale.release({ leaseToken: renewal.leaseToken })).outcome).toBe('released');
    expect(await engine.inspect(target)).toEqual([]);
  });
});

describe('timeouts and partial failures', () => {
  const slowAnswer = (): StoreHooks => ({
    write: async (ops, next, call) => {
      const outcomes = await next(ops);
      if (call === 1) {
        // The answer is lost after the contention budget (2 s) has passed: a timeout, not contention.
        await sleep(2_300);
        throw lostAnswer('bulk');
      }
      return outcomes;
    },
  });

  it('a write that times out past the contention budget is resolved by reading back, not reported as contention', async () => {
    const target = docs('slow-write', ['a', 'b'], 'pipeline');
    const grant = await over(slowAnswer()).acquire(target);
    expect(await owners(target)).toEqual({ a: ['pipeline'], b: ['pipeline'] });
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
  });

  it('keys found by that read-back are rolled back when the call then meets a conflict', async () => {
    await engine.acquire(docs('read-back', ['c'], 'blocker', { ttlMs: 60_000 }));
    const error = await failure(over(slowAnswer()).acquire(docs('read-back', ['a', 'b', 'c'], 'pipeline')));
    expect(error).toBeInstanceOf(LockHeldError);
    expect(await owners({ namespace: 'read-back', granularity: 'document', ids: ['a', 'b', 'c'] })).toEqual({ c: ['blocker'] });
  });

  it('when two answers in a row are lost, what both writes took is rolled back (found by the interleaving tests)', async () => {
    const ns = 'lost-twice';
    await engine.acquire(docs(ns, ['a'], 'neighbour', { mode: 'shared', ttlMs: 60_000 }));
    const twice = over({
      write: async (ops, next, call) => {
        // A compatible reader changes a first, so the victim needs a second round for it.
        if (call === 1) await engine.acquire(docs(ns, ['a'], 'passer-by', { mode: 'shared', ttlMs: 60_000 }));
        const outcomes = await next(ops);
        if (call <= 2) throw lostAnswer('bulk');
        return outcomes;
      },
    });
    const error = await failure(twice.acquire(docs(ns, ['a', 'b'], 'victim', { mode: 'shared' })));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.message).toContain('nothing is held');
    expect(await owners({ namespace: ns, granularity: 'document', ids: ['a', 'b'] }, 'shared')).toEqual({ a: ['neighbour', 'passer-by'] });
  });

  it('a bulk item refused on its own does not leave the other items of the bulk held', async () => {
    // The real node refuses one item (a field its strict mapping does not know); the others apply.
    const broken = over({
      write: (ops, next) => next(ops.map((op, position) => (position === 1 && op.kind === 'create' ? { ...op, body: { ...op.body, unexpected: true } } : op))),
    });
    const error = await failure(broken.acquire(docs('bulk-item', ['a', 'b', 'c'], 'pipeline')));
    expect(error).toBeInstanceOf(StoreRejectedError);
    expect(await owners({ namespace: 'bulk-item', granularity: 'document', ids: ['a', 'b', 'c'] })).toEqual({});
  });

  it('a lost answer with the store then down is reported as an unknown outcome, and a retry with the requestId gets the keys', async () => {
    const request = docs('unknown', ['a', 'b'], 'pipeline', { requestId: 'exec-9', ttlMs: 10_000 });
    const down = (): never => {
      throw new StoreUnavailableError({ operation: 'read' }, 'connection refused (simulated)');
    };
    const flaky = over({
      write: async (ops, next, call) => {
        const outcomes = await next(ops);
        if (call === 1) throw lostAnswer('bulk');
        return outcomes;
      },
      read: async () => down(),
      readPrimary: async () => down(),
    });
    const error = (await failure(flaky.acquire(request))) as LockOutcomeUnknownError;
    expect(error).toBeInstanceOf(LockOutcomeUnknownError);
    expect(error).toMatchObject({ retryable: true, context: { requestId: 'exec-9' } });
    const retry = await engine.acquire(request);
    expect(retry.reused).toBe(true);
    expect(await owners(request)).toEqual({ a: ['pipeline'], b: ['pipeline'] });
    expect((await engine.release({ leaseToken: retry.leaseToken })).outcome).toBe('released');
  });
});

describe('fencing tokens stay exact', () => {
  it('encode (epoch, primary term, seq_no) as a 63-bit decimal, ordered across terms and epochs, distinct past 2^53', () => {
    expect(fencingToken(1, 0)).toBe('10000000000000');
    expect(compareFencingTokens(fencingToken(1, 9_999_999_999_999), fencingToken(2, 0))).toBe(-1);
    expect(fencingToken(908, 1)).not.toBe(fencingToken(908, 2));
    expect(BigInt(fencingToken(MAX_PRIMARY_TERM, 9_999_999_999_999, MAX_EPOCH))).toBeLessThanOrEqual(2n ** 63n - 1n);
    expect(() => fencingToken(MAX_PRIMARY_TERM + 1, 0)).toThrow(FencingRangeError);
    expect(() => fencingToken(1, 0, MAX_EPOCH + 1)).toThrow(FencingRangeError);
    expect(() => fencingToken(1, 10_000_000_000_000)).toThrow(FencingRangeError);
    expect(compareFencingTokens('9', '10')).toBe(-1);
    // A new incarnation's first write is above anything the one before it could encode.
    expect(compareFencingTokens(fencingToken(MAX_PRIMARY_TERM, 9_999_999_999_999, 4), fencingToken(1, 0, 5))).toBe(-1);
    for (const epoch of [0, 1, MAX_EPOCH]) {
      for (const term of [1, 899, 900, 901, MAX_PRIMARY_TERM]) {
        for (const seqNo of [0, 1, 9_999_999_999_999]) {
          expect(BigInt(fencingToken(term, seqNo, epoch))).toBe(BigInt(epoch) * 10n ** 16n + BigInt(term) * 10n ** 13n + BigInt(seqNo));
        }
      }
    }
  });

  it('a write beyond the encodable range is never a grant, and no document is left that cannot change', async () => {
    // No real index reaches 10^13 sequence numbers on demand: the stand-in shifts the positions the node answers.
    const far = over({
      write: async (ops, next) => (await next(ops)).map((outcome) => (outcome.ok ? { ...outcome, seqNo: outcome.seqNo + 10_000_000_000_000 } : outcome)),
    });
    await expect(far.acquire(docs('far', ['x'], 'p'))).rejects.toBeInstanceOf(FencingRangeError);
    expect(await engine.inspect({ namespace: 'far', granularity: 'document', ids: ['x'] })).toEqual([]);
    const pending: StoredLock = {
      docId: 'd',
      seqNo: 20_000_000_000_000,
      primaryTerm: 1,
      index: 'i',
      body: {
        namespace: 'n',
        granularity: 'document',
        key: 'k',
        lockId: 'd',
        holders: [{ lease: 'l', proof: 'p', owner: 'o', mode: 'X', expiresAt: 0, grantedAt: 0, fence: null, request: null }],
        minExpiresAt: 0,
        maxExpiresAt: 0,
        updatedAt: 0,
      },
    };
    expect(() => settleFences(pending)).not.toThrow();
  });
});

describe('Unicode', () => {
  it('ids and paths lock by their NFC form: "é" as one code point or as e + accent is one lock', async () => {
    const composed = 'caf\u00e9';
    const decomposed = 'cafe\u0301';
    const grant = await engine.acquire(docs('unicode', [composed], 'a'));
    await expect(engine.acquire(docs('unicode', [decomposed], 'b'))).rejects.toBeInstanceOf(LockHeldError);
    const path = await engine.acquire(tree('unicode', `/menu/${decomposed}`, 'a'));
    expect(path.target).toMatchObject({ path: `/menu/${composed}` });
    await expect(engine.acquire(tree('unicode', `/menu/${composed}`, 'b'))).rejects.toBeInstanceOf(LockHeldError);
    for (const held of [grant, path]) await engine.release({ leaseToken: held.leaseToken });
  });
});
