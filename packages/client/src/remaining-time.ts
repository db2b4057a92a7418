/**
 * A lock taken inside a Lambda function must not outlive it: when the function times out, nothing
 * releases the lock, and the next caller waits for its lease to end. So with `remainingTimeMs`
 * (e.g. `context.getRemainingTimeInMillis`) every lease asked for ends before the function's
 * deadline, less a reserve for the release and the function's answer; when even the shortest lease
 * would not fit, the call is refused before any request (InsufficientTimeError).
 */
import { InsufficientTimeError } from './local-errors.js';
import type { LockClientSettings } from './settings.js';

/** The Lambda function's remaining time in ms, e.g. `context.getRemainingTimeInMillis`. */
export type RemainingTime = () => number;

export interface LeaseAsk {
  /** undefined: the service's default. */
  ttlMs?: number | undefined;
  waitMs?: number | undefined;
}

/** What is left for a lease: the remaining time less the reserve. */
export function availableMs(remainingTimeMs: RemainingTime, settings: Readonly<LockClientSettings>): number {
  return Math.floor(remainingTimeMs() - settings.deadlineReserveMs);
}

/**
 * The acquire's ttlMs and waitMs cut so that a grant given at the end of its wait still ends in
 * time (wait + TTL within what is left). The wait keeps what it asked for as long as the shortest
 * lease still fits after it; the TTL gets the rest. Only what changed is returned.
 */
export function fitAcquire(ask: LeaseAsk, remainingTimeMs: RemainingTime, settings: Readonly<LockClientSettings>): LeaseAsk {
  const available = availableMs(remainingTimeMs, settings);
  if (available < settings.minTtlMs) throw tooLittleTime('acquire', available, settings);
  const waitMs = Math.min(ask.waitMs ?? 0, available - settings.minTtlMs);
  const ttlMs = Math.min(ask.ttlMs ?? settings.defaultTtlMs, available - waitMs);
  return {
    ...(ask.ttlMs !== undefined || ttlMs < settings.defaultTtlMs ? { ttlMs } : {}),
    ...(ask.waitMs !== undefined ? { waitMs } : {}),
  };
}

/** A renewal's ttlMs within what is left; throws InsufficientTimeError when not even the shortest lease fits. */
export function fitRenewal(ttlMs: number, remainingTimeMs: RemainingTime, settings: Readonly<LockClientSettings>): number {
  const available = availableMs(remainingTimeMs, settings);
  if (available < settings.minTtlMs) throw tooLittleTime('renew', available, settings);
  return Math.min(ttlMs, available);
}

function tooLittleTime(operation: 'acquire' | 'renew', available: number, settings: Readonly<LockClientSettings>): InsufficientTimeError {
  const availableMs = Math.max(0, available);
  return new InsufficientTimeError(
    { availableMs, neededMs: settings.minTtlMs },
    `Not enough of the function's time left to ${operation} a lease: ${availableMs} ms after the ${settings.deadlineReserveMs} ms reserve, ` +
      `less than the shortest lease (${settings.minTtlMs} ms). No request was sent.`,
  );
}
