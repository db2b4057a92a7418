/** The fault runner's channel waiters: the notifier's injected faults, and a waiter that queues, is woken, and claims (a wake-up is a hint, the claim the grant). */
import { describe, expect, it } from 'vitest';
import type { HistoryEvent } from '../../faults/history.js';
import { everyWaiterEnded, FaultNotifier } from '../../faults/wake.js';
import { acquireWoken, emptyTally, FAULTS_NAMESPACE, type Target, TTL_MS } from '../../faults/workload.js';
import { MemoryLockStore } from '../../packages/engine/src/memory-store.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { WakeMessage } from '../../packages/engine/src/wake.js';

const NONE = { thrown: 0, duplicated: 0, lost: 0, gone: 0 };

const failed = (ticket: string): WakeMessage => ({ outcome: 'failed', ticket, error: 'LockWaitExpiredError', message: 'expired' });

const target: Target = {
  request: { granularity: 'document', ids: ['k0'] },
  keys: (exclusive) => [{ key: 'd|k0', mode: exclusive ? 'X' : 'S' }],
};

function engineWith(notifier: FaultNotifier): LockService {
  return new LockService(new MemoryLockStore(), { notifier, maxClockSkewMs: 100, queue: { claimWindowMs: 2_000, rewakeAfterMs: 1_000 } });
}

const hold = (engine: LockService, owner: string) =>
  engine.acquire({ namespace: FAULTS_NAMESPACE, granularity: 'document', ids: ['k0'], mode: 'exclusive', owner, ttlMs: TTL_MS, waitMs: 0 });

describe('the in-memory notifier', () => {
  it('loses, says gone, duplicates and throws after sending, each for its share of the deliveries', async () => {
    // One roll per delivery: lost below 0.2, gone below 0.4, duplicated below 0.6, thrown below 0.8, plain above.
    const rolls = [0.1, 0.3, 0.5, 0.7, 0.9];
    const notifier = new FaultNotifier({ lost: 0.2, gone: 0.2, duplicated: 0.2, thrown: 0.2 }, () => rolls.shift()!);
    const lost = notifier.open('c0', 0).channel;
    const gone = notifier.open('c1', 0).channel;
    const twice = notifier.open('c2', 0).channel;
    const thrown = notifier.open('c3', 0).channel;
    const plain = notifier.open('c4', 0).channel;
    await expect(notifier.notify(lost, failed('t0'))).resolves.toBe('delivered');
    await expect(notifier.notify(gone, failed('t1'))).resolves.toBe('gone');
    await expect(notifier.notify(twice, failed('t2'))).resolves.toBe('delivered');
    await expect(notifier.notify(thrown, failed('t3'))).rejects.toThrow(/notifier died/);
    await expect(notifier.notify(plain, failed('t4'))).resolves.toBe('delivered');
    expect(notifier.tally.injected).toEqual({ lost: 1, gone: 1, duplicated: 1, thrown: 1 });
    expect(await notifier.listen(lost, 10)).toEqual({ kind: 'timed-out' });
    expect(await notifier.listen(gone, 10)).toEqual({ kind: 'gone' });
    expect(await notifier.listen(thrown, 10)).toMatchObject({ kind: 'message', message: { ticket: 't3' } });
    // Once the waiter stopped listening, its channel is gone.
    notifier.end(plain, 'told-failed');
    await expect(notifier.notify(plain, failed('t4'))).resolves.toBe('gone');
    notifier.end(lost, 'timed-out');
    notifier.end(gone, 'gave-up');
    notifier.end(twice, 'told-failed');
    notifier.end(thrown, 'told-failed');
    const tally = notifier.count();
    expect(tally).toMatchObject({ waiters: 5, toldFailed: 3, timedOut: 1, gaveUp: 1, duplicates: 1, late: 1, untold: 0 });
    expect(everyWaiterEnded(tally)).toBe(true);
  });

  it('wakes a listener as soon as a message comes, and counts a waiter that never ended', async () => {
    const notifier = new FaultNotifier(NONE);
    const { channel } = notifier.open('c0', 0);
    const heard = notifier.listen(channel, 5_000);
    await notifier.notify(channel, failed('t0'));
    expect(await heard).toMatchObject({ kind: 'message', message: { outcome: 'failed' } });
    expect(notifier.waiting()).toBe(0);
    notifier.open('c1', 0);
    expect(notifier.waiting()).toBe(1);
    expect(everyWaiterEnded(notifier.count())).toBe(false);
  });
});

describe('a channel waiter', () => {
  it('queues (never granted at once), is woken when the holder releases, and claims: the claim is the grant', async () => {
    const notifier = new FaultNotifier(NONE);
    const engine = engineWith(notifier);
    const holder = await hold(engine, 'holder');
    const history: HistoryEvent[] = [];
    const wake = { notifier, grantedAtOnce: 0 };
    const tally = emptyTally();
    const waiting = acquireWoken(wake, engine, 'c1', 0, target, true, tally, (event) => void history.push({ client: 'c1', time: Date.now(), ...event }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(notifier.waiting()).toBe(1);
    await engine.release({ leaseToken: holder.leaseToken });
    const grant = await waiting;
    expect(grant?.owner).toBe('c1');
    expect(BigInt(grant!.fencingToken)).toBeGreaterThan(BigInt(holder.fencingToken));
    expect(wake.grantedAtOnce).toBe(0);
    expect(history).toEqual([]);
    expect(notifier.count()).toMatchObject({ waiters: 1, woken: 1, claimed: 1, untold: 0 });
    // The lock is the claimer's: another acquire is refused.
    await expect(hold(engine, 'other')).rejects.toThrow();
  });

  it('queues for a free lock too, reserved at once and woken at once, then claims', async () => {
    const notifier = new FaultNotifier(NONE);
    const engine = engineWith(notifier);
    const wake = { notifier, grantedAtOnce: 0 };
    const grant = await acquireWoken(wake, engine, 'c1', 0, target, false, emptyTally(), () => undefined);
    expect(grant?.mode).toBe('shared');
    expect(wake.grantedAtOnce).toBe(0);
    expect(notifier.count()).toMatchObject({ waiters: 1, woken: 1, claimed: 1 });
  });

  it('gives up when its channel says gone, holding nothing, and the reservation is cancelled', async () => {
    const notifier = new FaultNotifier({ ...NONE, gone: 1 });
    const engine = engineWith(notifier);
    const history: HistoryEvent[] = [];
    const grant = await acquireWoken({ notifier, grantedAtOnce: 0 }, engine, 'c1', 0, target, true, emptyTally(), (event) =>
      history.push({ client: 'c1', time: Date.now(), ...event }),
    );
    expect(grant).toBeUndefined();
    expect(history).toMatchObject([{ type: 'fail', op: 'acquire', error: 'ChannelGone' }]);
    expect(notifier.count()).toMatchObject({ waiters: 1, gaveUp: 1, untold: 0 });
    // Its reservation went with it: the lock is free for the next caller at once.
    await expect(hold(engine, 'other')).resolves.toMatchObject({ owner: 'other' });
  });
});
