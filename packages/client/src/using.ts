/**
 * The end of `using()`: run the work with a signal that aborts when the lock is lost (or the
 * caller's own signal aborts), release whatever happened, and refuse a result that was not
 * protected to the end.
 */
import type { Lock } from './handle.js';

/** The work run under a lock: `signal` aborts when the lock is lost (or the caller's signal aborts). */
export type LockedWork<T> = (signal: AbortSignal, lock: Lock) => Promise<T> | T;

export interface HoldingOptions {
  /** The caller's own cancellation: aborts the work's signal too (the lock is released as usual). */
  signal?: AbortSignal;
  /** Called when the final release fails (the lease then ends on its own at its expiry). */
  onReleaseError?: (error: unknown) => void;
  /**
   * The lock took work on (an idempotencyKey): its release records the outcome, `completed` with the
   * work's result, or `failed` if the work threw. A result that was not recorded is not returned: the
   * release's LeaseLostError is thrown instead (a later delivery may run the work again).
   */
  record?: { ttlMs?: number };
}

export async function runHolding<T>(lock: Lock, work: LockedWork<T>, options: HoldingOptions = {}): Promise<T> {
  const signal = options.signal ? AbortSignal.any([lock.signal, options.signal]) : lock.signal;
  if (options.record) return runRecorded(lock, work, signal, options.record);
  let result: T;
  try {
    result = await work(signal, lock);
  } finally {
    await lock.release().catch((error: unknown) => options.onReleaseError?.(error));
  }
  // The work finished, but the lock had been lost before: what it did was not protected to the end.
  if (lock.lost) throw lock.lost;
  return result;
}

async function runRecorded<T>(lock: Lock, work: LockedWork<T>, signal: AbortSignal, record: { ttlMs?: number }): Promise<T> {
  const ttl = record.ttlMs === undefined ? {} : { ttlMs: record.ttlMs };
  let result: T;
  try {
    result = await work(signal, lock);
  } catch (error) {
    // Failed work is recorded as such (the next delivery may run it again); the work's own error is what the caller hears.
    await lock.release({ record: { status: 'failed', ...ttl } }).catch(() => undefined);
    throw error;
  }
  if (lock.lost) {
    await lock.release().catch(() => undefined);
    throw lock.lost;
  }
  // The record is the last step: a result is returned only once it is recorded.
  await lock.release({ record: { status: 'completed', ...(result === undefined ? {} : { result }), ...ttl } });
  return result;
}
