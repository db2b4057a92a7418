/**
 * The client's testing entry is the service, not a likeness of it: the store it runs on passes the
 * store contract every store passes (test/store/contract.ts), a whole lock cycle through it answers
 * as through HTTP and invocation (specs/lock-cycle.ts), and each fault it offers does what the
 * real fault does to a caller.
 */
import { LeaseLostError, LockClient, LockHeldError, LockOutcomeUnknownError, StoreUnavailableError, WorkPayloadMismatchError } from '@es-lease-locks/client';
import { testLocks } from '@es-lease-locks/client/testing';
import { describe, expect, it } from 'vitest';
import { storeOf } from '../../../packages/client/src/testing/test-locks.js';
import type { MemoryLockStore } from '../../../packages/engine/src/memory-store.js';
import { storeContract } from '../../store/contract.js';
import { lockCycle } from '../specs/lock-cycle.js';

storeContract('testing entry’s', async () => {
  const store = storeOf(testLocks()) as MemoryLockStore;
  return { store, refresh: async () => {}, drop: async () => store.drop(), recreate: async () => store.recreate() };
});

const target = (id: string) => ({ namespace: 'faults', granularity: 'document' as const, ids: [id] });
const noRetries = { retry: { retries: 0 } };

describe('@es-lease-locks/client/testing', () => {
  it('runs a whole lock cycle as the service answers it', async () => {
    await lockCycle(testLocks().locker, 'testing-cycle', { detailedErrors: true });
  });

  it('a lost answer: the acquire applied, the caller hears LockOutcomeUnknownError, and its retry with the requestId gets the same grant', async () => {
    const locks = testLocks();
    locks.faults.loseNextAnswer('acquire');
    const request = { ...target('lost'), owner: 'alice', requestId: 'req-1' };
    const lost = await locks.locker.acquire(request).catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(LockOutcomeUnknownError);
    expect(lost).toMatchObject({ requestId: 'req-1', retryable: true });
    const grant = await locks.locker.acquire(request);
    const { locks: states } = await locks.locker.inspect!(target('lost'));
    expect(states[0]!.holders).toHaveLength(1);
    expect('fencingToken' in grant && grant.fencingToken).toBe(states[0]!.holders[0]!.fencingToken);
    // Through a LockClient the retry is the client's own: one lost answer costs nothing.
    locks.faults.loseNextAnswer('acquire');
    const lock = await new LockClient({ transport: locks.locker }).acquire({ ...target('lost-2'), owner: 'bob' });
    expect(lock.state).toBe('held');
  });

  it('a store that is down answers StoreUnavailableError (retryable) and changes nothing; back up, calls succeed', async () => {
    const locks = testLocks();
    const client = new LockClient({ transport: locks.locker, settings: noRetries });
    locks.faults.storeDown();
    const down = await client.acquire({ ...target('down'), owner: 'alice' }).catch((error: unknown) => error);
    expect(down).toBeInstanceOf(StoreUnavailableError);
    expect(down).toMatchObject({ status: 503, retryable: true });
    locks.faults.storeDown(false);
    expect(await client.inspect(target('down'))).toEqual([]);
    expect((await client.acquire({ ...target('down'), owner: 'alice' })).state).toBe('held');
  });

  it('a revoked holder: its next renewal is refused, the lock is free, and the revoke is told who it took', async () => {
    const locks = testLocks();
    const client = new LockClient({ transport: locks.locker, settings: noRetries });
    const lock = await client.acquire({ ...target('revoked'), owner: 'alice' });
    const revocation = await locks.revoke(target('revoked'), { reason: 'stuck holder', by: 'oncall' });
    expect(revocation.revoked.map((holder) => holder.owner)).toEqual(['alice']);
    await expect(lock.extend()).rejects.toBeInstanceOf(LeaseLostError);
    expect(lock.signal.aborted).toBe(true);
    expect((await client.acquire({ ...target('revoked'), owner: 'bob' })).state).toBe('held');
  });

  it('an expired lease: held until the clock passes its end (and the skew allowance), then another caller takes the lock', async () => {
    const locks = testLocks();
    const client = new LockClient({ transport: locks.locker, settings: noRetries });
    await client.acquire({ ...target('expiry'), owner: 'alice', ttlMs: 60_000 });
    locks.clock.advance(59_000);
    await expect(client.acquire({ ...target('expiry'), owner: 'bob' })).rejects.toBeInstanceOf(LockHeldError);
    await locks.expireLeases(target('expiry'));
    const taken = await client.acquire({ ...target('expiry'), owner: 'bob' });
    expect(taken.state).toBe('held');
    expect((await client.inspect(target('expiry')))[0]!.holders.map((holder) => holder.owner)).toEqual(['bob']);
  });

  it('work that runs once: a redelivery gets the record, another payload under the same key is refused by name', async () => {
    const locks = testLocks();
    const client = new LockClient({ transport: locks.locker, settings: noRetries });
    const event = { detail: { orderId: 'o-1', amount: 10 } };
    const once = { event, eventKeyPath: 'detail.orderId', throwOnNoKey: true };
    let runs = 0;
    const work = async () => ++runs;
    expect(await client.using({ ...target('work'), owner: 'a' }, work, once)).toBe(1);
    expect(await client.using({ ...target('work'), owner: 'b' }, work, once)).toBe(1);
    const other = { ...once, event: { detail: { orderId: 'o-1', amount: 99 } } };
    await expect(client.using({ ...target('work'), owner: 'c' }, work, other)).rejects.toBeInstanceOf(WorkPayloadMismatchError);
    expect(runs).toBe(1);
  });

  it('refuses a fault it does not know and a clock moved backwards, naming the argument', () => {
    const locks = testLocks();
    expect(() => locks.faults.loseNextAnswer('sweep' as never)).toThrow(/operation must be one of acquire, renew, release, inspect, list or any/);
    expect(() => locks.clock.advance(-1)).toThrow(/ms must be a finite number >= 0/);
  });
});
