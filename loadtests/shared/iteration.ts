/**
 * One iteration of the workload, written once for both sides of the kit: the k6 script runs it over
 * the HTTP API (k6/locks.ts), the engine driver through a LockEngine in the Node process
 * (runner/engine/probe.ts). Each side hands it an IterationDriver (lock-driver.ts).
 *
 *   draw     the next operation (a replayed trace's by its number), and the granularity's lock for it;
 *   acquire  retrying a busy (409, contention 503) or unavailable (503) answer with the one backoff,
 *            at least the server's retryAfterMs, until the retry budget: then a busy lock is "gave up"
 *            (contention, as a real client reports "try later"), an unavailable store an error;
 *   hold     the critical section (criticalSectionMs of simulated work);
 *   release  always, retrying only what may pass (503, or no answer) for about 6 s: a lock left held
 *            would only lapse with its TTL and skew the run; then the hold record for the safety
 *            checker (start right after the grant, end right before the release).
 *
 * Plain TypeScript: k6 and Node load it alike.
 */
import { backoffDelayMs, retryDelayMs } from './backoff.ts';
import type { Grant, IterationDriver, IterationEnd, OpTags, ReleaseAnswer } from './lock-driver.ts';
import { type Granularity, type HoldRecord, lockPlan, type OperationSource, type RetryPolicy } from './workload.ts';

/** Release attempts after the critical section: 100 ms doubling to 3.2 s between them, about 6 s in all. */
export const RELEASE_ATTEMPTS = 6;
export const RELEASE_BACKOFF = { baseMs: 100, maxMs: 3200 };

/** What every iteration of a run shares. */
export interface IterationPlan {
  granularity: Granularity;
  namespace: string;
  ttlMs: number;
  retry: RetryPolicy;
  criticalSectionMs: number;
  operations: Pick<OperationSource, 'next'>;
}

/** What is this iteration's own. */
export interface IterationStart {
  /** Its number in the run: picks a replayed trace's operation. */
  index: number;
  stage: string;
  /** The lock owner (k6: `<runId>-<granularity>-vu<n>`). */
  owner: string;
  /** Sent with the acquire: retries of one operation are one request to the service. */
  requestId: string;
}

export async function runIteration(driver: IterationDriver, plan: IterationPlan, start: IterationStart): Promise<IterationEnd> {
  const { locks, metrics } = driver;
  const op = plan.operations.next(driver.random, start.index);
  const lock = lockPlan(plan.granularity, op);
  const tags: OpTags = { stage: start.stage, op: op.kind };
  const ended = (end: IterationEnd): IterationEnd => {
    metrics.ended(end, tags);
    return end;
  };
  metrics.offered(tags);

  const began = driver.now();
  let backoffMs = 0;
  let grant: Grant | undefined;
  for (let attempt = 0; grant === undefined; attempt++) {
    if (attempt > 0 && driver.stopped()) return ended({ outcome: 'interrupted' });
    const answer = await locks.acquire(
      {
        namespace: plan.namespace,
        granularity: lock.granularity,
        ...(lock.ids ? { ids: lock.ids } : {}),
        ...(lock.path ? { path: lock.path } : {}),
        mode: lock.mode,
        owner: start.owner,
        ttlMs: plan.ttlMs,
        requestId: start.requestId,
      },
      tags,
    );
    metrics.answered(answer, tags);
    if (answer.kind === 'granted') {
      grant = answer.grant;
      break;
    }
    if (driver.stopped()) return ended({ outcome: 'interrupted' });
    if (answer.kind === 'error') {
      metrics.problem(`acquire ${answer.status}`, answer.detail);
      return ended({ outcome: 'error', status: answer.status, durationMs: driver.now() - began });
    }
    const delay = retryDelayMs(plan.retry, attempt, answer.retryAfterMs, driver.random);
    if (driver.now() + delay - began > plan.retry.budgetMs) {
      if (answer.kind === 'conflict') return ended({ outcome: 'gave-up', durationMs: driver.now() - began });
      metrics.problem('acquire 503', 'store unavailable until the retry budget ran out');
      return ended({ outcome: 'error', status: 503, durationMs: driver.now() - began });
    }
    metrics.retried(delay, tags);
    backoffMs += delay;
    await driver.sleep(delay);
  }

  const heldFrom = driver.now();
  const acquireMs = heldFrom - began;
  if (!driver.stopped()) metrics.acquired(acquireMs, tags);
  let heldUntil = heldFrom;
  let release = 'error';
  let releaseMs = 0;
  try {
    // The critical section: the simulated read, edit, rename, create or delete of op.files.
    if (plan.criticalSectionMs > 0) await driver.sleep(plan.criticalSectionMs);
  } finally {
    heldUntil = driver.now();
    release = await releaseWithRetries(driver, grant.leaseToken, tags);
    releaseMs = driver.now() - heldUntil;
    const record: HoldRecord = {
      granularity: plan.granularity,
      namespace: plan.namespace,
      op: op.kind,
      mode: lock.mode,
      keys: lock.keys,
      fence: grant.fencingToken,
      start: heldFrom,
      end: heldUntil,
      expiresAt: grant.expiresAt,
      owner: start.owner,
      release,
      target: op.target,
    };
    metrics.held(record);
  }
  if (driver.stopped()) return ended({ outcome: 'interrupted' });
  const durationMs = driver.now() - began;
  if (release === 'error') return ended({ outcome: 'release-failed', durationMs });
  return ended({ outcome: 'done', release, durationMs, acquireMs, backoffMs, releaseMs, files: Math.max(1, op.files.length) });
}

/** Release's outcome ('released', 'expired', ...), or 'error' when no attempt got one. */
async function releaseWithRetries(driver: IterationDriver, leaseToken: string, tags: OpTags): Promise<string> {
  for (let attempt = 0; attempt < RELEASE_ATTEMPTS; attempt++) {
    const answer: ReleaseAnswer = await driver.locks.release(leaseToken, tags);
    if (answer.ok) return answer.outcome;
    // Only a 503 or no answer at all may pass on a later attempt.
    if (answer.status !== 503 && answer.status !== 0) {
      driver.metrics.problem(`release ${answer.status}`, answer.detail);
      return 'error';
    }
    await driver.sleep(backoffDelayMs(RELEASE_BACKOFF, attempt, driver.random));
  }
  return 'error';
}
