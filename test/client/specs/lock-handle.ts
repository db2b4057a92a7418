/**
 * The lock handle: its signal aborts when the lock is lost, whichever way it is lost, and never
 * while it is held; extend keeps it, release gives it up.
 */
import { httpTransport, LeaseLostError, LockClient } from '@es-lease-locks/client';
import { expect, it } from 'vitest';
import type { ClientStack } from '../support/client-stack.js';

const aborted = (signal: AbortSignal): Promise<number> =>
  new Promise((resolve) => (signal.aborted ? resolve(Date.now()) : signal.addEventListener('abort', () => resolve(Date.now()), { once: true })));

export function lockHandleSpecs(stack: ClientStack): void {
  const client = () => new LockClient({ transport: httpTransport(stack.details.baseUrl) });
  const doc = (id: string, owner: string, ttlMs: number) => ({ namespace: 'handle', granularity: 'document' as const, ids: [id], owner, ttlMs });

  it('extend swaps in the new lease token and moves the lease end; the fencing token stays; the signal stays quiet', async () => {
    const lock = await client().acquire(doc('extend', 'alice', 2_000));
    const { leaseToken, expiresAtMs } = lock;
    await new Promise((resolve) => setTimeout(resolve, 300));
    await lock.extend();
    expect(lock.leaseToken).not.toBe(leaseToken);
    expect(lock.expiresAtMs).toBeGreaterThan(expiresAtMs);
    expect(lock.fencingToken).toBe(lock.grant.fencingToken);
    await lock.release();
    expect(lock.signal.aborted).toBe(false);
  });

  it('aborts when the lease is released behind its back: the next background renewal finds it gone', async () => {
    const locks = client();
    const lock = await locks.acquire(doc('behind', 'alice', 1_500), { autoRenew: true });
    await locks.transport.release({ leaseToken: lock.leaseToken });
    await aborted(lock.signal);
    expect(lock.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(lock.state).toBe('lost');
    expect(lock.lost).toBe(lock.signal.reason);
    await expect(lock.extend()).rejects.toBeInstanceOf(LeaseLostError);
    expect((await lock.release()).outcome).toBe('not_held');
  });

  it('aborts by the local clock, less the safety margin, when the lease runs out unrenewed: before anyone else can get the lock', async () => {
    const locks = client();
    const askedAt = Date.now();
    const lock = await locks.acquire(doc('clock', 'alice', 1_000));
    // Someone else waits for the same lock: the service lets them in once the lease is over.
    const next = locks.acquire({ ...doc('clock', 'bob', 5_000), waitMs: 5_000 });
    const abortedAt = await aborted(lock.signal);
    const successor = await next;
    // 1000 ms lease, margin min(500, 1000 / 4): lost 750 ms after the request left.
    expect(abortedAt - askedAt).toBeGreaterThanOrEqual(740);
    expect(abortedAt - askedAt).toBeLessThan(1_000);
    expect(lock.signal.reason).toBeInstanceOf(LeaseLostError);
    expect((lock.signal.reason as Error).message).toMatch(/local clock/);
    // The successor's lease started (by the same machine's clock) only after this holder was told to stop.
    const successorGrantedAt = successor.grant.expiresAtMs - successor.grant.ttlMs;
    expect(abortedAt).toBeLessThanOrEqual(successorGrantedAt);
    expect(BigInt(successor.fencingToken)).toBeGreaterThan(BigInt(lock.fencingToken));
    await expect(lock.extend()).rejects.toBeInstanceOf(LeaseLostError);
    await successor.release();
  });

  it('aborts when another delivery with the same requestId takes the lock over (it gets a larger fencing token)', async () => {
    const request = { ...doc('takeover', 'consumer', 1_500), requestId: 'message-7' };
    const first = await client().acquire(request, { autoRenew: true });
    const second = await client().acquire(request);
    expect(second.grant.reused).toBe(true);
    expect(BigInt(second.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
    await aborted(first.signal);
    expect(first.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(second.signal.aborted).toBe(false);
    expect((await second.release()).outcome).toBe('released');
  });

  it('a released lock stops renewing and stays quiet; releasing again answers the first outcome', async () => {
    const locks = client();
    const lock = await locks.acquire(doc('quiet', 'alice', 1_000), { autoRenew: true });
    const outcome = await lock.release();
    expect(outcome.outcome).toBe('released');
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(lock.signal.aborted).toBe(false);
    expect(lock.state).toBe('released');
    expect(await lock.release()).toBe(outcome);
    await expect(lock.extend()).rejects.toBeInstanceOf(LeaseLostError);
  });
}
