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
}

export async function runHolding<T>(lock: Lock, work: LockedWork<T>, options: HoldingOptions = {}): Promise<T> {
  const signal = options.signal ? AbortSignal.any([lock.signal, options.signal]) : lock.signal;
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
