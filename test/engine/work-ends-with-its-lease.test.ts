/**
 * Work that runs once keeps the first promise (issue 41, items 1, 2, 3, 5, 6 and the claims seen in
 * the code): every answer rests on time left after the call's last write, whatever ends a lease ends
 * its work, a token is all valid or all refused, a record is everyone's answer until its expiry plus
 * the skew allowance. Every case runs on the real node. The interposed store (tools/shared/interposed-store.ts)
 * is used only to place a pause or a lost answer between two of the engine's own requests, which a
 * healthy node cannot do on demand; each test says which.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { workDocId } from '../../packages/engine/src/doc-id.js';
import { LeaseLostError, LeaseTokenMismatchError, LockHeldError, StoreUnavailableError, WorkInProgressError } from '../../packages/engine/src/errors.js';
import type { CompletedWork, Grant } from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { WriteOp } from '../../packages/engine/src/store.js';
import { workKeyHash } from '../../packages/engine/src/work.js';
import { interpose, type StoreHooks } from '../../tools/shared/interposed-store.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

const SKEW = 50;
let client: SearchClient;
let index: string;
let engine: LockService;
let store: ElasticsearchLockStore;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'work-lease');
  engine = engineOn(client, index);
  store = new ElasticsearchLockStore(client, index);
});
afterAll(async () => closeTestClient(client));

const NS = 'jobs';
const job = (id: string, idempotencyKey: string, owner: string, extra: Record<string, unknown> = {}) => ({
  namespace: NS,
  granularity: 'document',
  ids: [id],
  owner,
  idempotencyKey,
  ...extra,
});
const isGrant = (outcome: unknown): outcome is Grant => typeof outcome === 'object' && outcome !== null && 'leaseToken' in outcome;
const completed = (outcome: unknown): CompletedWork => {
  expect(outcome).toMatchObject({ status: 'completed' });
  return outcome as CompletedWork;
};
const failure = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => {
      throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
/** An engine whose store calls go through `hooks`, on the same lock index. */
const over = (hooks: StoreHooks, settings: Record<string, unknown> = {}): LockService =>
  new LockService(interpose(store, hooks), { maxClockSkewMs: SKEW, ...settings });
/** Whether a write is the work document's (a claim or a record), rather than a lock document's. */
const onWork = (ops: readonly WriteOp[]): boolean => ops.some((op) => op.docId.includes('|w|'));
const holders = async (id: string) => (await engine.inspect({ namespace: NS, granularity: 'document', ids: [id] })).flatMap((state) => state.holders);
const workDoc = async (id: string, key: string) =>
  (await store.readPrimary([workDocId(NS, workKeyHash({ namespace: NS, granularity: 'document', ids: [id] }, key))])).values().next().value;

describe('a work grant rests on time left after the claim', () => {
  it('is not answered when the claim answers after the lease ended, while a second delivery ran the work and recorded it (item 1)', async () => {
    // A slow answer (a stalled node, a GC pause) after the claim applied: the hook waits after the real write.
    let second: unknown;
    const slow = over({
      write: async (ops, next) => {
        const outcomes = await next(ops);
        if (onWork(ops)) {
          await sleep(1_000 + SKEW + 100);
          const grant = await engine.acquireWork({ ...job('slow-1', 'msg', 'second'), ttlMs: 10_000 });
          expect(isGrant(grant)).toBe(true);
          second = await engine.release({ leaseToken: (grant as Grant).leaseToken, record: { status: 'completed', result: 'second' } });
        }
        return outcomes;
      },
    });
    const first = await failure(slow.acquireWork({ ...job('slow-1', 'msg', 'first'), ttlMs: 1_000 }));
    expect(first).toBeInstanceOf(StoreUnavailableError);
    expect(second).toMatchObject({ outcome: 'released', recorded: 'completed' });
    expect(await holders('slow-1')).toEqual([]);
    expect(completed(await engine.acquireWork(job('slow-1', 'msg', 'third'))).result).toBe('second');
  });

  it('never replaces the claim of a later lease: a taker whose claim goes out after its lease ended is refused (seen in the code)', async () => {
    // A pause before the claim is sent (the hook waits before the real write): meanwhile the lease runs
    // out and a second delivery takes the lock and the work on.
    let second: Grant | undefined;
    const paused = over({
      write: async (ops, next) => {
        if (onWork(ops) && !second) {
          await sleep(1_000 + SKEW + 100);
          second = (await engine.acquireWork({ ...job('late-1', 'msg', 'second'), ttlMs: 10_000 })) as Grant;
          expect(isGrant(second)).toBe(true);
        }
        return next(ops);
      },
    });
    const first = await failure(paused.acquireWork({ ...job('late-1', 'msg', 'first'), ttlMs: 1_000 }));
    expect(first).toBeInstanceOf(WorkInProgressError);
    expect((await workDoc('late-1', 'msg'))?.body.work?.claim?.owner).toBe('second');
    expect(await engine.release({ leaseToken: second!.leaseToken, record: { status: 'completed', result: 'second' } })).toMatchObject({
      recorded: 'completed',
    });
  });

  it('a lost claim answer leaves a claim naming a released lease: harmless, the next delivery replaces it at once (seen in the code)', async () => {
    // The answer lost after the claim applied (the hook throws after the real write).
    const lossy = over({
      write: async (ops, next) => {
        const outcomes = await next(ops);
        if (onWork(ops)) throw new StoreUnavailableError({ operation: 'bulk write', ambiguous: true }, 'socket hang up (simulated)');
        return outcomes;
      },
    });
    expect(await failure(lossy.acquireWork({ ...job('lost-1', 'msg', 'first'), ttlMs: 60_000 }))).toBeInstanceOf(StoreUnavailableError);
    expect(await holders('lost-1')).toEqual([]);
    expect((await workDoc('lost-1', 'msg'))?.body.work?.claim?.owner).toBe('first');
    // The claim's lease is given back: a delivery that does not wait takes the work on, and only it records.
    const next = await engine.acquireWork(job('lost-1', 'msg', 'next'));
    expect(isGrant(next)).toBe(true);
    await engine.release({ leaseToken: (next as Grant).leaseToken, record: { status: 'completed', result: 'next' } });
    expect(completed(await engine.acquireWork(job('lost-1', 'msg', 'third'))).result).toBe('next');
  });
});

describe('whatever ends a lease ends its work', () => {
  it('a revoke that lands between the record’s primary read and its write leaves nothing recorded (item 2)', async () => {
    // The order is the whole case: the hook runs the operator's revoke just before the record's write is sent.
    const target = { namespace: NS, granularity: 'document', ids: ['rev-1'] } as const;
    const holder = (await engine.acquireWork({ ...job('rev-1', 'msg', 'holder'), ttlMs: 60_000 })) as Grant;
    const revoking = over({
      write: async (ops, next) => {
        if (onWork(ops)) await engine.revoke({ ...target, reason: 'stuck', by: 'oncall' });
        return next(ops);
      },
    });
    const recorded = await failure(revoking.release({ leaseToken: holder.leaseToken, record: { status: 'completed', result: 'revoked holder' } }));
    expect(recorded).toBeInstanceOf(LeaseLostError);
    // The next delivery runs the work: the revoked holder's result is nobody's answer.
    const next = await engine.acquireWork(job('rev-1', 'msg', 'next'));
    expect(isGrant(next)).toBe(true);
    expect(BigInt((next as Grant).fencingToken)).toBeGreaterThan(BigInt(holder.fencingToken));
    await engine.release({ leaseToken: (next as Grant).leaseToken, record: { status: 'completed', result: 'next' } });
    expect(completed(await engine.acquireWork(job('rev-1', 'msg', 'third'))).result).toBe('next');
  });

  it('the sweeper keeps the claim of a taker that renewed past the claim’s end (seen in the code)', async () => {
    const taker = (await engine.acquireWork({ ...job('renewed-1', 'msg', 'taker'), ttlMs: 1_000 })) as Grant;
    const renewal = await engine.renew({ leaseToken: taker.leaseToken, ttlMs: 10_000 });
    await sleep(1_000 + SKEW + 100);
    await client.indices.refresh({ index });
    await engine.sweep();
    // Still the taker's: a duplicate hears the work is in progress, and the taker's record applies.
    const claim = (await workDoc('renewed-1', 'msg'))?.body.work?.claim;
    expect(claim).toMatchObject({ owner: 'taker', expiresAt: renewal.expiresAt });
    const duplicate = await failure(engine.acquireWork(job('renewed-1', 'msg', 'duplicate')));
    expect(duplicate).toBeInstanceOf(WorkInProgressError);
    expect(await engine.release({ leaseToken: renewal.leaseToken, record: { status: 'completed', result: 'taker' } })).toMatchObject({
      recorded: 'completed',
    });
  });

  it('an earlier delivery that recorded after a later one took the lock, before its claim: the later one answers that record and runs nothing (T5 window, harmless)', async () => {
    // The old lease passed its check and stalls before its record's write (the hook holds that write);
    // the later delivery's claim lets it go first (its hook), so the record lands between the later
    // delivery's grant and its claim.
    let letRecordGo!: () => void;
    const recordMayGo = new Promise<void>((resolve) => {
      letRecordGo = resolve;
    });
    let recordLanded!: Promise<unknown>;
    const old = (await engine.acquireWork({ ...job('t5-1', 'msg', 'sqs:m', { requestId: 'sqs:m' }), ttlMs: 1_000 })) as Grant;
    const stalled = over({
      write: async (ops, next) => {
        if (onWork(ops)) await recordMayGo;
        return next(ops);
      },
    });
    recordLanded = stalled.release({ leaseToken: old.leaseToken, record: { status: 'completed', result: 'old' } });
    await sleep(1_000 + SKEW + 100);
    const later = over({
      write: async (ops, next) => {
        if (onWork(ops)) {
          letRecordGo();
          await recordLanded.catch(() => undefined);
        }
        return next(ops);
      },
    });
    const answer = await later.acquireWork({ ...job('t5-1', 'msg', 'sqs:m', { requestId: 'sqs:m' }), ttlMs: 10_000 });
    expect(completed(answer).result).toBe('old');
    expect(await recordLanded).toMatchObject({ recorded: 'completed' });
    expect(await holders('t5-1')).toEqual([]);
  });
});

describe('a token is all valid or all refused', () => {
  /** The holder's own token with its work hash (`w`) pointed at another target's work; its MAC, if any, kept. */
  const pointedAt = (token: string, keyHash: string): string => {
    const [prefix, payload, secret, mac] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
    const edited = Buffer.from(JSON.stringify({ ...claims, w: keyHash })).toString('base64url');
    return [prefix, edited, secret, ...(mac ? [mac] : [])].join('.');
  };
  const victimHash = (id: string) => workKeyHash({ namespace: NS, granularity: 'document', ids: [id] }, 'msg');

  it('with a signing key, an edited token is refused whole: a plain lock’s holder cannot record another key’s work (item 3)', async () => {
    const signed = engineOn(client, index, { tokenSigningKey: Buffer.alloc(32, 3) });
    const plain = await signed.acquire({ namespace: NS, granularity: 'document', ids: ['plain-1'], owner: 'plain' });
    const forged = pointedAt(plain.leaseToken, victimHash('victim-1'));
    expect(await failure(signed.release({ leaseToken: forged, record: { status: 'completed', result: 'forged' } }))).toBeInstanceOf(LeaseTokenMismatchError);
    expect(await failure(signed.renew({ leaseToken: forged }))).toBeInstanceOf(LeaseTokenMismatchError);
    // A token without its MAC is refused as well.
    const unsigned = plain.leaseToken.split('.').slice(0, 3).join('.');
    expect(await failure(signed.release({ leaseToken: unsigned }))).toBeInstanceOf(LeaseTokenMismatchError);
    // The first real delivery runs the work; the plain lock is untouched.
    const real = await signed.acquireWork(job('victim-1', 'msg', 'real'));
    expect(isGrant(real)).toBe(true);
    await signed.release({ leaseToken: (real as Grant).leaseToken, record: { status: 'completed', result: 'real' } });
    expect((await holders('plain-1')).map((holder) => holder.owner)).toEqual(['plain']);
    await signed.release({ leaseToken: plain.leaseToken });
  });

  it('without a signing key the work hash is unauthenticated, but pointing it elsewhere records nothing: a record needs its lease’s claim (item 3)', async () => {
    const plain = await engine.acquire({ namespace: NS, granularity: 'document', ids: ['plain-2'], owner: 'plain' });
    const forged = pointedAt(plain.leaseToken, victimHash('victim-2'));
    expect(await failure(engine.release({ leaseToken: forged, record: { status: 'completed', result: 'forged' } }))).toBeInstanceOf(LeaseLostError);
    expect(await workDoc('victim-2', 'msg')).toBeNull();
    const real = await engine.acquireWork(job('victim-2', 'msg', 'real'));
    expect(isGrant(real)).toBe(true);
    await engine.release({ leaseToken: (real as Grant).leaseToken });
  });
});

describe('a record is everyone’s answer until its expiry plus the skew allowance', () => {
  it('a caller whose clock runs ahead, inside the bound, is answered the record, not granted the work (item 5)', async () => {
    const skewMs = 2_000;
    const skewed = await freshLockIndex(client, 'work-skew', { skewMs });
    const exact = engineOn(client, skewed, { maxClockSkewMs: skewMs });
    const ahead = engineOn(client, skewed, { maxClockSkewMs: skewMs, now: () => Date.now() + 1_500 });
    const first = (await exact.acquireWork(job('skew-1', 'msg', 'first'))) as Grant;
    await exact.release({ leaseToken: first.leaseToken, record: { status: 'completed', result: 'first', ttlMs: 1_000 } });
    // By the fast clock the record has expired; by the exact one it has not (for the next second).
    expect(completed(await ahead.acquireWork(job('skew-1', 'msg', 'ahead'))).result).toBe('first');
    expect(completed(await exact.acquireWork(job('skew-1', 'msg', 'exact'))).result).toBe('first');
    expect((await exact.inspect({ namespace: NS, granularity: 'document', ids: ['skew-1'] })).flatMap((state) => state.holders)).toEqual([]);
  });
});

describe('a completed answer leaves nothing behind', () => {
  it('a woken channel waiter told `completed` gives its reservation up at once (item 6)', async () => {
    const notifier = { notify: async () => 'delivered' as const };
    const queued = engineOn(client, index, { notifier });
    const holder = (await queued.acquireWork({ ...job('wake-1', 'msg', 'holder'), ttlMs: 60_000 })) as Grant;
    const waiter = { ...job('wake-1', 'msg', 'waiter', { requestId: 'm-2' }), ttlMs: 60_000 };
    const ticket = await queued.acquireWork({ ...waiter, wake: { taskToken: 'token-wake-1' } });
    expect(ticket).toMatchObject({ status: 'queued' });
    await queued.release({ leaseToken: holder.leaseToken, record: { status: 'completed', result: 'holder' } });
    // Woken, the waiter claims (the same call without wake) and hears the result.
    expect(completed(await queued.acquireWork(waiter)).result).toBe('holder');
    // The lock is free for anyone now, not reserved for the claim window.
    const other = await queued.acquire({ namespace: NS, granularity: 'document', ids: ['wake-1'], owner: 'other' }).catch((error: unknown) => error);
    expect(other).not.toBeInstanceOf(LockHeldError);
    await queued.release({ leaseToken: (other as Grant).leaseToken });
  });
});
