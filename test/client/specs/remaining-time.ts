/**
 * Inside a Lambda function (`remainingTimeMs`: the context's remaining time), no lease is asked past
 * the function's deadline less the reserve (1 s by default), and too little time refuses before
 * any request.
 */
import { httpTransport, InsufficientTimeError, LeaseLostError, LockClient } from '@es-lease-locks/client';
import { afterEach, expect, it } from 'vitest';
import type { ClientStack } from '../support/client-stack.js';
import { type RecordingProxy, recordingProxy } from '../support/recording-proxy.js';

const RESERVE_MS = 1_000;

export function remainingTimeSpecs(stack: ClientStack): void {
  let proxy: RecordingProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  const throughProxy = async () => {
    proxy = await recordingProxy(stack.details.baseUrl);
    return new LockClient({ transport: httpTransport(proxy.url) });
  };
  const doc = (id: string) => ({ namespace: 'deadline', granularity: 'document' as const, ids: [id], owner: 'fn', ttlMs: 30_000 });
  /** A Lambda context's clock: the function has `ms` left from now. */
  const functionWith = (ms: number) => {
    const deadline = Date.now() + ms;
    return { deadline, remainingTimeMs: () => deadline - Date.now() };
  };

  it('refuses before sending anything when the time left, less the reserve, is shorter than the shortest lease', async () => {
    const locks = await throughProxy();
    const { remainingTimeMs } = functionWith(1_800);
    const error = await locks.using(doc('late'), async () => 'never', { remainingTimeMs }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(InsufficientTimeError);
    expect((error as InsufficientTimeError).message).toMatch(/No request was sent/);
    expect((error as InsufficientTimeError).availableMs).toBeLessThan(1_000);
    expect(proxy!.requests).toEqual([]);
  });

  it("cuts the acquire's wait and lease so that even a grant at the end of the wait ends before the deadline, less the reserve", async () => {
    const locks = await throughProxy();
    const { deadline, remainingTimeMs } = functionWith(6_000);
    const lock = await locks.acquire({ ...doc('fit'), waitMs: 3_000 }, { remainingTimeMs });
    const [sent] = proxy!.to('/acquire').map((request) => JSON.parse(request.body) as { ttlMs: number; waitMs: number });
    // The wait is kept; the lease gets what is left after it.
    expect(sent!.waitMs).toBeGreaterThan(2_900);
    expect(sent!.waitMs).toBeLessThanOrEqual(3_000);
    expect(sent!.ttlMs + sent!.waitMs).toBeLessThanOrEqual(6_000 - RESERVE_MS);
    expect(sent!.ttlMs + sent!.waitMs).toBeGreaterThan(6_000 - RESERVE_MS - 200);
    expect(lock.grant.expiresAtMs).toBeLessThanOrEqual(deadline - RESERVE_MS);
    await lock.release();
  });

  it("renews only within the time left, and ends the lock (its signal aborts) before the function's deadline", async () => {
    const locks = await throughProxy();
    const { deadline, remainingTimeMs } = functionWith(3_500);
    let abortedAt = 0;
    const error = await locks
      .using(
        doc('runs-out'),
        async (signal) => {
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          abortedAt = Date.now();
        },
        { remainingTimeMs },
      )
      .catch((thrown: unknown) => thrown);
    // The lock ended with the function's time: a LeaseLostError that says why.
    expect(error).toBeInstanceOf(LeaseLostError);
    expect((error as LeaseLostError).cause).toBeInstanceOf(InsufficientTimeError);
    expect(abortedAt).toBeLessThanOrEqual(deadline - RESERVE_MS);
    // It was renewed while there was room, and no lease it asked for ran past the deadline less the reserve.
    const renewals = proxy!.to('/renew');
    expect(renewals.length).toBeGreaterThanOrEqual(1);
    for (const request of [...proxy!.to('/acquire'), ...renewals]) {
      const { ttlMs } = JSON.parse(request.body) as { ttlMs: number };
      expect(ttlMs).toBeGreaterThanOrEqual(1_000);
      expect(ttlMs).toBeLessThanOrEqual(3_500 - RESERVE_MS);
    }
    expect(proxy!.to('/release')).toHaveLength(1);
  });
}
