/**
 * Acquire: take every key of the target in its planned mode, or none. A free exclusive key costs one
 * create; anything with holders is read first and written conditionally on what was read. Each try is
 * an AcquireAttempt (acquire-attempt.ts); this file decides how long to keep trying, and how to wait:
 * a single-key acquire that may wait joins the lock's queue and is served in order (in this call
 * until `waitMs`, or through its wake channel); others retry with jittered backoff until the
 * deadline, and never overtake a queued waiter.
 */
import { LockContentionError, LockHeldError } from '../errors.js';
import { planKeys } from '../keys.js';
import { newLease } from '../lease-token.js';
import type { AcquireRequest, Grant, Queued } from '../model.js';
import { AcquireAttempt } from './acquire-attempt.js';
import type { EngineContext } from './context.js';
import { blockedOnlyAbove, watchAbove } from './watch-above.js';

/** Tries until granted, refused for good, or `waitMs` has passed: in the queue for a single key, with backoff otherwise. */
export async function acquire(context: EngineContext, request: AcquireRequest): Promise<Grant> {
  return (await acquireOrQueue(context, request)) as Grant;
}

/**
 * An acquire with a wake channel answers at once, queued: its ticket is reserved at once when the lock
 * is free, or when the lock is handed over, and the channel is then woken to claim it (the same
 * acquire again, without `wake`). Only that claim grants: a wake-up is a hint.
 */
export async function acquireOrQueue(context: EngineContext, request: AcquireRequest): Promise<Grant | Queued> {
  const { settings } = context;
  const keys = planKeys(request.target, request.mode);
  const started = settings.now();
  const deadline = started + request.waitMs;
  // A waiter in the call keeps looking until everyone sees its ticket run out (its end plus the clock
  // skew allowance): it can then never be handed the lock after it gave up.
  const queueUntil = request.wake ? started + (request.queueTtlMs ?? settings.queue.ticketTtlMs.defaultMs) : deadline - settings.maxClockSkewMs;
  const queues = keys.length === 1 && (request.wake !== undefined || (request.waitMs > 0 && queueUntil > started));
  for (let attempt = 0; ; attempt++) {
    try {
      // A lease of its own per attempt: a copy that lags behind can then never show an earlier
      // attempt's holder, rolled back since, as a holder of this one.
      return await new AcquireAttempt(context, request, keys, newLease(), { deadline, ...(queues ? { queueUntil } : {}) }).run();
    } catch (error) {
      if (!(error instanceof LockHeldError || error instanceof LockContentionError)) throw error;
      const remaining = deadline - settings.now();
      if (remaining <= 0) {
        if (error instanceof LockHeldError && request.waitMs > 0) {
          throw new LockHeldError({
            conflicts: error.conflicts,
            retryAfterMs: error.retryAfterMs,
            waitedMs: settings.now() - started,
            cause: error,
          });
        }
        throw error;
      }
      if (error instanceof LockHeldError && settings.retry.watchAbove && blockedOnlyAbove(request.target, error.conflicts)) {
        await watchAbove(context, request.target.namespace, error.conflicts, deadline);
        continue;
      }
      // Exponential backoff with full jitter (anywhere from 0 to the ceiling): waiters that met the same
      // holder spread out over the whole interval instead of coming back together in its second half.
      const ceiling = Math.min(settings.retry.maxDelayMs, settings.retry.baseDelayMs * 2 ** attempt);
      const hinted = error instanceof LockHeldError ? error.retryAfterMs : ceiling;
      await settings.sleep(Math.max(1, Math.min(remaining, Math.min(ceiling, hinted) * Math.random())));
    }
  }
}
