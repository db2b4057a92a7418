/**
 * A whole lock cycle through a LockClient, the same whatever the transport: acquire (a handle),
 * inspect, a conflicting acquire refused, bad input refused, extend (a new lease token, the same
 * fencing token), release, and the released lease refused on renewal.
 */

import { LeaseLostError, LockClient, type Locker, LockHeldError, ValidationError } from '@es-lease-locks/client';
import { expect } from 'vitest';

export interface CycleOptions {
  /** The transport carries the error body's details (HTTP does; a direct invocation carries the name and message). */
  detailedErrors: boolean;
}

export async function lockCycle(transport: Locker, namespace: string, { detailedErrors }: CycleOptions): Promise<void> {
  const locks = new LockClient({ transport });
  const before = Date.now();
  const lock = await locks.acquire({ namespace, granularity: 'document', ids: ['b', 'a'], owner: 'alice', ttlMs: 5_000 });
  expect(lock.state).toBe('held');
  expect(lock.fencingToken).toMatch(/^\d+$/);
  expect(lock.grant.keys.map((key) => key.key).sort()).toEqual(['a', 'b']);
  expect(lock.expiresAtMs).toBeGreaterThanOrEqual(before + 5_000 - 50);
  expect(lock.expiresAtMs).toBeLessThanOrEqual(Date.now() + 5_000);

  const states = await locks.inspect({ namespace, granularity: 'document', ids: ['a', 'b'] });
  expect(states.map((state) => [state.key, state.holders.map((holder) => holder.owner)])).toEqual([
    ['a', ['alice']],
    ['b', ['alice']],
  ]);

  const held = await locks.acquire({ namespace, granularity: 'document', ids: ['a'], owner: 'bob' }).catch((error: unknown) => error);
  expect(held).toBeInstanceOf(LockHeldError);
  expect(held).toMatchObject({ name: 'LockHeldError', status: 409, retryable: true });
  if (detailedErrors) {
    expect((held as LockHeldError).conflicts[0]).toMatchObject({ key: 'a', holders: [{ owner: 'alice', mode: 'X' }] });
    expect((held as LockHeldError).retryAfterMs).toBeGreaterThan(0);
  }

  const invalid = await locks.acquire({ namespace, granularity: 'tree', owner: 'carol' }).catch((error: unknown) => error);
  expect(invalid).toBeInstanceOf(ValidationError);
  expect(invalid).toMatchObject({ status: 400, retryable: false });
  if (detailedErrors) expect((invalid as ValidationError).fields).toEqual([expect.objectContaining({ field: 'path', rule: 'required' })]);

  const firstToken = lock.leaseToken;
  await lock.extend(8_000);
  expect(lock.leaseToken).not.toBe(firstToken);
  expect(lock.ttlMs).toBe(8_000);
  expect(lock.fencingToken).toBe(lock.grant.fencingToken);
  expect(lock.expiresAtMs).toBeGreaterThan(Date.now() + 7_000);

  const released = await lock.release();
  expect(released).toEqual({ outcome: 'released', releasedKeys: ['a', 'b'], missingKeys: [] });
  expect(await lock.release()).toBe(released);
  expect(lock.state).toBe('released');
  expect(lock.signal.aborted).toBe(false);
  await expect(transport.renew({ leaseToken: lock.leaseToken })).rejects.toBeInstanceOf(LeaseLostError);
  expect(await locks.inspect({ namespace, granularity: 'document', ids: ['a', 'b'] })).toEqual([]);
}
