/**
 * withLock: hold a lock for the duration of some work.
 *
 *   const result = await withLock(engineOrClient, { namespace: 'orders', granularity: 'document', ids: ['o-1'], owner: 'me', ttlMs: 10_000 },
 *     async ({ fencingToken, signal }) => writeSomewhere({ fencingToken, signal }));
 *
 * - acquires (optionally waiting: `options.waitMs`);
 * - renews in the background every `renewFraction` of the TTL (default 1/2), always with the token
 *   the last renewal returned; a renewal that fails for a transient reason is retried sooner;
 * - aborts `signal` when the lease is lost: a renewal says so (LeaseLostError / LeaseTokenMismatchError),
 *   or the local clock passes the lease's end without a successful renewal (measured from the moment
 *   the request that set it was sent, so clock differences with the server do not matter);
 * - always releases, also when `work` throws; if the lease was lost before `work` returned, withLock
 *   rejects with the loss (a LeaseLostError) even if `work` resolved, because what it did was not
 *   protected to the end;
 * - with `localTable`, first queues in this process behind local holders of the same keys
 *   (local-lock-table.ts), so that concurrent callers of one process send one acquire per key at a
 *   time instead of racing; the local wait counts against `waitMs`, and the local slot is given up
 *   only after the release has been answered (or failed), whatever happened.
 */

import { LeaseLostError, LeaseTokenMismatchError, ValidationError } from '../core/errors.js';
import type { LockService } from '../core/service.js';
import { type AcquireBody, LockHttpClient } from './http-client.js';
import type { LocalLockTable, LocalSlot } from './local-lock-table.js';

export interface LeaseContext {
  /** Pass it along with every write to the protected resource; the resource rejects smaller ones. */
  fencingToken: string;
  /** Aborted when the lease is lost (reason: a LeaseLostError) or the caller's own signal aborts. */
  signal: AbortSignal;
  /** The current lease token (it changes with each renewal). */
  leaseToken(): string;
  /** When the lease ends by the local clock, unless renewed (epoch ms). */
  expiresAtMs(): number;
}

export interface WithLockOptions {
  /** Wait up to this long for the lock (server side, with backoff). Default 0: fail at once with LockHeldError. */
  waitMs?: number;
  /** Renew when this fraction of the TTL has passed since the last grant or renewal. Default 0.5. */
  renewFraction?: number;
  /** Aborting this aborts `work`'s signal and releases. */
  signal?: AbortSignal;
  /** Called after each successful renewal. */
  onRenew?: (renewal: { fencingToken: string; expiresAtMs: number }) => void;
  /** Called once when the lease is lost (before the signal aborts). */
  onLost?: (reason: Error) => void;
  /** Called when the final release fails (the lease then ends on its own at its expiry). */
  onReleaseError?: (error: unknown) => void;
  /**
   * One table shared by the callers of this process (keep it at module scope): callers that want
   * conflicting locks queue there, and only the first in line asks the lock service. Bounded per key
   * (LockHeldError at once when full); the wait there is part of `waitMs`.
   */
  localTable?: LocalLockTable;
}

/** Either the in-process engine or the HTTP client: the three calls withLock needs. */
export type Locker = LockService | LockHttpClient;

interface Lease {
  leaseToken: string;
  fencingToken: string;
  ttlMs: number;
  /** The lease's end by the service's clock (epoch ms). */
  expiresAtMs?: number;
}

interface Backend {
  acquire(request: AcquireBody): Promise<Lease>;
  renew(leaseToken: string, ttlMs: number): Promise<{ leaseToken: string; fencingToken: string }>;
  release(leaseToken: string): Promise<unknown>;
}

function backendOf(locker: Locker): Backend {
  if (locker instanceof LockHttpClient) {
    return {
      acquire: (request) => locker.acquire(request),
      renew: (leaseToken, ttlMs) => locker.renew({ leaseToken, ttlMs }),
      release: (leaseToken) => locker.release({ leaseToken }),
    };
  }
  return {
    acquire: async (request) => {
      const grant = await locker.acquire(request);
      return { ...grant, expiresAtMs: grant.expiresAt };
    },
    renew: (leaseToken, ttlMs) => locker.renew({ leaseToken, ttlMs }),
    release: (leaseToken) => locker.release({ leaseToken }),
  };
}

const now = (): number => performance.now();

function lostError(message: string, keys: string[] = []): LeaseLostError {
  const error = new LeaseLostError(undefined, { leaseId: '', lostKeys: keys });
  Object.defineProperty(error, 'message', { value: message, enumerable: false, writable: true, configurable: true });
  return error;
}

export async function withLock<T>(
  locker: Locker,
  request: AcquireBody,
  work: (lease: LeaseContext) => Promise<T> | T,
  options: WithLockOptions = {},
): Promise<T> {
  const fraction = options.renewFraction ?? 0.5;
  if (!(fraction > 0 && fraction < 1))
    throw new ValidationError(undefined, { fields: [{ field: 'renewFraction', rule: 'range', message: 'must be between 0 and 1 (exclusive)' }] });
  options.signal?.throwIfAborted();
  const backend = backendOf(locker);

  const waitMs = options.waitMs ?? request.waitMs;
  const queuedAt = now();
  const slot: LocalSlot | undefined = await options.localTable?.enter(request, {
    ...(waitMs !== undefined ? { waitMs } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const sentAt = now();
  let grant: Lease;
  try {
    // What the local queue left of the wait goes to the service.
    const remaining = waitMs === undefined || slot === undefined ? waitMs : Math.max(0, Math.floor(waitMs - (sentAt - queuedAt)));
    grant = await backend.acquire({ ...request, ...(remaining !== undefined ? { waitMs: remaining } : {}) });
  } catch (error) {
    slot?.release();
    throw error;
  }
  const receivedAt = now();
  const ttlMs = grant.ttlMs;
  let token = grant.leaseToken;
  const wallOffset = Date.now() - receivedAt;
  // Local (monotonic) end of the lease. The service counted its TTL from its grant, which came after our
  // request left, so sentAt + ttl is a floor. After a wait (waitMs) the grant came later than that: its
  // expiresAt read by our own clock is then the end, as the lock model has every holder take it (callers'
  // clocks agree within maxClockSkewMs), and never later than a full TTL from the answer's arrival.
  let localExpiry = Math.max(
    sentAt + ttlMs,
    grant.expiresAtMs === undefined ? Number.NEGATIVE_INFINITY : Math.min(grant.expiresAtMs - wallOffset, receivedAt + ttlMs),
  );
  slot?.leaseEndsAt(Math.round(localExpiry + wallOffset));

  const controller = new AbortController();
  let lost: Error | undefined;
  let renewTimer: NodeJS.Timeout | undefined;
  let expiryTimer: NodeJS.Timeout | undefined;
  let renewing: Promise<void> | undefined;
  let finished = false;

  const loseLease = (reason: Error) => {
    if (lost || finished) return;
    lost = reason;
    clearTimeout(renewTimer);
    clearTimeout(expiryTimer);
    options.onLost?.(reason);
    controller.abort(reason);
  };

  const armExpiry = () => {
    clearTimeout(expiryTimer);
    expiryTimer = setTimeout(() => loseLease(lostError('The lease ran out by the local clock before a renewal succeeded')), Math.max(0, localExpiry - now()));
    expiryTimer.unref?.();
  };

  const scheduleRenewal = (delayMs: number) => {
    clearTimeout(renewTimer);
    if (finished || lost) return;
    renewTimer = setTimeout(
      () => {
        renewing = renewOnce();
      },
      Math.max(0, delayMs),
    );
    renewTimer.unref?.();
  };

  const renewOnce = async (): Promise<void> => {
    if (finished || lost) return;
    const started = now();
    try {
      const renewal = await backend.renew(token, ttlMs);
      if (finished || lost) return;
      token = renewal.leaseToken;
      localExpiry = started + ttlMs;
      slot?.leaseEndsAt(Math.round(localExpiry + wallOffset));
      armExpiry();
      options.onRenew?.({ fencingToken: renewal.fencingToken, expiresAtMs: Math.round(localExpiry + wallOffset) });
      scheduleRenewal(started + ttlMs * fraction - now());
    } catch (error) {
      if (finished || lost) return;
      if (error instanceof LeaseLostError || error instanceof LeaseTokenMismatchError) {
        loseLease(error);
        return;
      }
      if (error instanceof ValidationError) {
        loseLease(lostError(`Renewal refused: ${error.message}`));
        return;
      }
      // Transient (store unavailable, network): try again soon, while the lease may still be ours.
      const remaining = localExpiry - now();
      scheduleRenewal(Math.min(1_000, Math.max(50, remaining / 4)));
    }
  };

  // Gives the lease up; the local slot goes only after the answer (or failure): the next local holder
  // must not find our lease still in the lock document.
  const releaseLease = async (): Promise<void> => {
    try {
      await backend.release(token);
    } catch (error) {
      options.onReleaseError?.(error);
    } finally {
      slot?.release();
    }
  };

  const outer = options.signal;
  // Work never starts on a lease that is already over: an answer that arrived after the lease's local
  // end (a slow answer, a paused event loop), or a caller that gave up while the acquire was in flight.
  const tooLate = now() >= localExpiry ? lostError('The grant arrived after the lease had already run out by the local clock') : undefined;
  if (tooLate || outer?.aborted) {
    await releaseLease();
    if (tooLate) {
      options.onLost?.(tooLate);
      throw tooLate;
    }
    outer!.throwIfAborted();
  }
  const onOuterAbort = () => controller.abort(outer?.reason);
  outer?.addEventListener('abort', onOuterAbort, { once: true });

  armExpiry();
  // Counted from when the acquire was sent, like the lease itself (a slow answer leaves less time).
  scheduleRenewal(sentAt + ttlMs * fraction - now());

  let result: T;
  try {
    result = await work({
      fencingToken: grant.fencingToken,
      signal: controller.signal,
      leaseToken: () => token,
      expiresAtMs: () => Math.round(localExpiry + wallOffset),
    });
  } finally {
    finished = true;
    clearTimeout(renewTimer);
    clearTimeout(expiryTimer);
    outer?.removeEventListener('abort', onOuterAbort);
    // A renewal in flight changes the token: release with the newest one, but do not wait on a
    // renewal that hangs (any token of the lease can release it).
    if (renewing !== undefined) await Promise.race([renewing.catch(() => {}), new Promise((resolve) => setTimeout(resolve, Math.min(ttlMs, 2_000)).unref?.())]);
    await releaseLease();
  }
  if (lost) throw lost;
  return result;
}
