import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LeaseLostError, LeaseTokenMismatchError, LockHeldError } from '../../packages/engine/src/errors.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

let client: SearchClient;
let engine: LockService;
let signed: LockService;

beforeAll(async () => {
  client = testClient();
  const index = await freshLockIndex(client, 'exclusive');
  engine = engineOn(client, index);
  signed = engineOn(client, index, { tokenSigningKey: Buffer.alloc(32, 7) });
});
afterAll(async () => closeTestClient(client));

const doc = (id: string, owner = 'worker') => ({ namespace: 'orders', granularity: 'document', ids: [id], owner });

describe('exclusive locks', () => {
  it('are exclusive: a second acquirer gets a conflict naming the holder', async () => {
    const grant = await engine.acquire({ ...doc('o-1', 'alice'), ttlMs: 10_000 });
    const refusal = await engine.acquire(doc('o-1', 'bob')).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(LockHeldError);
    const held = refusal as LockHeldError;
    expect(held.conflicts[0]).toMatchObject({ key: 'o-1', holders: [{ owner: 'alice', mode: 'X', expiresAt: grant.expiresAt }] });
    expect(held.retryAfterMs).toBeGreaterThan(0);
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('grant exactly one of 50 concurrent acquirers, round after round', async () => {
    for (let round = 0; round < 10; round++) {
      const attempts = await Promise.allSettled(
        Array.from({ length: 50 }, (_, worker) => engine.acquire({ ...doc(`race-${round % 3}`, `w${worker}`), ttlMs: 5_000 })),
      );
      const granted = attempts.filter((attempt) => attempt.status === 'fulfilled');
      const refused = attempts.filter((attempt) => attempt.status === 'rejected');
      expect(granted).toHaveLength(1);
      expect(refused.every((attempt) => (attempt as PromiseRejectedResult).reason instanceof LockHeldError)).toBe(true);
      await engine.release({ leaseToken: (granted[0] as PromiseFulfilledResult<{ leaseToken: string }>).value.leaseToken });
    }
  });

  it('can be taken again after release, with a larger fencing token', async () => {
    const first = await engine.acquire(doc('o-2'));
    expect(await engine.release({ leaseToken: first.leaseToken })).toMatchObject({ outcome: 'released' });
    const second = await engine.acquire(doc('o-2'));
    expect(BigInt(second.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
    await engine.release({ leaseToken: second.leaseToken });
  });

  it('expire: the next acquirer takes over at once, and the old holder can no longer renew or release', async () => {
    const old = await engine.acquire({ ...doc('o-3', 'slow'), ttlMs: 1_000 });
    await sleep(1_100);
    const taker = await engine.acquire({ ...doc('o-3', 'fast'), ttlMs: 10_000 });
    expect(BigInt(taker.fencingToken)).toBeGreaterThan(BigInt(old.fencingToken));
    await expect(engine.renew({ leaseToken: old.leaseToken })).rejects.toBeInstanceOf(LeaseLostError);
    expect(await engine.release({ leaseToken: old.leaseToken })).toMatchObject({ outcome: 'not_held' });
    expect((await engine.inspect({ namespace: 'orders', granularity: 'document', ids: ['o-3'] }))[0]?.holders).toMatchObject([{ owner: 'fast' }]);
    await engine.release({ leaseToken: taker.leaseToken });
  });

  it('release with a wrong token is refused and changes nothing', async () => {
    const grant = await engine.acquire(doc('o-4', 'owner'));
    const [prefix, payload, , mac] = grant.leaseToken.split('.');
    const forged = [prefix, payload, 'A'.repeat(43), ...(mac ? [mac] : [])].join('.');
    await expect(engine.release({ leaseToken: forged })).rejects.toBeInstanceOf(LeaseTokenMismatchError);
    await expect(engine.renew({ leaseToken: forged })).rejects.toBeInstanceOf(LeaseTokenMismatchError);
    const [state] = await engine.inspect({ namespace: 'orders', granularity: 'document', ids: ['o-4'] });
    expect(state?.holders).toMatchObject([{ owner: 'owner', expiresAt: grant.expiresAt }]);
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('release twice: the second call says the lease is already gone', async () => {
    const grant = await engine.acquire(doc('o-5'));
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('not_held');
  });

  it('renew extends the lease and keeps the fencing token', async () => {
    const grant = await engine.acquire({ ...doc('o-6'), ttlMs: 1_000 });
    const renewal = await engine.renew({ leaseToken: grant.leaseToken, ttlMs: 5_000 });
    expect(renewal.expiresAt).toBeGreaterThan(grant.expiresAt);
    expect(renewal.fencingToken).toBe(grant.fencingToken);
    await sleep(1_200);
    await expect(engine.acquire(doc('o-6', 'other'))).rejects.toBeInstanceOf(LockHeldError);
    expect((await engine.release({ leaseToken: renewal.leaseToken })).outcome).toBe('released');
  });

  it('a retried acquire with the same requestId takes the grant over, not a conflict: one holder, a larger fencing token', async () => {
    const request = { ...doc('o-7', 'pipeline'), requestId: 'exec-123' };
    const first = await engine.acquire(request);
    const retry = await engine.acquire(request);
    expect(retry.reused).toBe(true);
    expect(BigInt(retry.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
    expect((await engine.inspect({ namespace: 'orders', granularity: 'document', ids: ['o-7'] }))[0]?.holders).toHaveLength(1);
    // The retry's token now names the lease; the first response's token (lost in transit) names nothing.
    expect((await engine.release({ leaseToken: first.leaseToken })).outcome).toBe('not_held');
    expect((await engine.release({ leaseToken: retry.leaseToken })).outcome).toBe('released');
  });

  it('with a signing key, release of an exclusive lease still verifies ownership and reports outcomes', async () => {
    const grant = await signed.acquire(doc('o-8'));
    expect((await signed.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
    expect((await signed.release({ leaseToken: grant.leaseToken })).outcome).toBe('not_held');
    const renewed = await signed.acquire(doc('o-8'));
    const later = await signed.renew({ leaseToken: renewed.leaseToken });
    // The grant's token carries a stale hint after the renewal: release falls back to reading.
    expect((await signed.release({ leaseToken: renewed.leaseToken })).outcome).toBe('released');
    expect((await signed.release({ leaseToken: later.leaseToken })).outcome).toBe('not_held');
  });

  it.each([
    ['unsigned', () => engine],
    ['signed', () => signed],
  ])('release past the lease but before anyone took it says expired; after a renewal, even with the old token, released (%s tokens)', async (_, pick) => {
    const locks = pick();
    const lapsed = await locks.acquire({ ...doc('o-10'), ttlMs: 1_000 });
    await sleep(1_100);
    expect((await locks.release({ leaseToken: lapsed.leaseToken })).outcome).toBe('expired');
    const renewedLater = await locks.acquire({ ...doc('o-11'), ttlMs: 1_000 });
    await locks.renew({ leaseToken: renewedLater.leaseToken, ttlMs: 30_000 });
    await sleep(1_100);
    expect((await locks.release({ leaseToken: renewedLater.leaseToken })).outcome).toBe('released');
  });

  it('waits when asked: a bounded wait gets the lock once the holder releases', async () => {
    const holder = await engine.acquire(doc('o-9', 'holder'));
    setTimeout(() => void engine.release({ leaseToken: holder.leaseToken }), 300);
    const waiter = await engine.acquire({ ...doc('o-9', 'waiter'), waitMs: 5_000 });
    expect(BigInt(waiter.fencingToken)).toBeGreaterThan(BigInt(holder.fencingToken));
    await engine.release({ leaseToken: waiter.leaseToken });
  });
});
