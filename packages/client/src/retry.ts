/**
 * Retries of transient failures: exponential backoff with full jitter. The caller keeps whatever
 * makes a retry safe (the acquire's one requestId); this only decides whether and when.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LockServiceError } from './errors.js';
import type { RetrySettings } from './settings.js';

/** Worth repeating at once: the service or the way to it failed (5xx, no answer), not a held lock, a quota or bad input. */
export function isTransient(error: unknown): boolean {
  return error instanceof LockServiceError && error.transient;
}

export interface RetryOptions {
  retry: RetrySettings;
  signal?: AbortSignal;
  /** No retry whose pause would end after this moment (performance.now() ms), e.g. the lease's end. */
  until?: () => number;
  onRetry?: (error: unknown, attempt: number) => void;
}

export async function withRetries<T>(call: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const { retries, baseDelayMs, maxDelayMs } = options.retry;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call(attempt);
    } catch (error) {
      if (!isTransient(error) || attempt >= retries || options.signal?.aborted) throw error;
      // Full jitter: callers that failed together spread over the whole interval instead of colliding again.
      const pause = Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** attempt);
      if (options.until && performance.now() + pause >= options.until()) throw error;
      options.onRetry?.(error, attempt + 1);
      // An abort during the pause rejects with the signal's own reason, as the call itself would.
      await sleep(pause, undefined, options.signal ? { signal: options.signal } : {}).catch(() => options.signal?.throwIfAborted());
    }
  }
}
