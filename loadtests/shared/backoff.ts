/**
 * The kit's one backoff: k6 retries of a conflicted or unavailable acquire, and of a release.
 * Pure code with no imports but types, so k6 and node load it alike.
 */
import type { RetryPolicy } from './workload.ts';

export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/**
 * The wait before retry `attempt` (0-based): base doubling up to the cap, at least `floorMs`, with
 * equal jitter: half of it fixed so a retry never comes straight back, half random so clients that
 * collided spread out.
 */
export function backoffDelayMs(backoff: Backoff, attempt: number, random: () => number, floorMs = 0): number {
  const wait = Math.max(Math.min(backoff.maxMs, backoff.baseMs * 2 ** attempt), floorMs);
  return Math.max(1, Math.round(wait / 2 + (random() * wait) / 2));
}

/** An acquire's retry: the backoff, but at least the server's retryAfterMs hint (capped, so a long lease cannot stall the run). */
export function retryDelayMs(policy: RetryPolicy, attempt: number, retryAfterMs: number | undefined, random: () => number): number {
  const hinted = policy.honourRetryAfter && retryAfterMs && retryAfterMs > 0 ? Math.min(retryAfterMs, policy.maxDelayMs) : 0;
  return backoffDelayMs({ baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs }, attempt, random, hinted);
}
