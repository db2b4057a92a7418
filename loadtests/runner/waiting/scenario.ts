/**
 * The waiting scenario: callers in this process contend for a few hot locks through the engine
 * (a LockService on the lock store, the engine driver's target: engine/target.ts), each in a closed
 * loop: arrive, acquire (polling or queueing, within a budget), hold the lock for the critical
 * section, release, think, arrive again. One mode per run; the two are compared on the same workload
 * (every caller draws the same keys, modes and think times in both, from its own seeded generator).
 *
 *   polling   acquire with waitMs 0; on a busy answer (409, or a contention 503) sleep the kit's
 *             backoff (shared/backoff.ts: the server's retryAfterMs as a floor, capped, with jitter,
 *             as the load test's client and a Step Functions Retry do) and try again, until the budget.
 *   queueing  acquire with waitMs = what is left of the budget: the caller joins the lock's queue
 *             and is served in arrival order, handed the lock in the write that frees it.
 *
 * Every lock store request is counted from the search client's diagnostic events (engine/request-count.ts,
 * as the engine driver counts them): all of the run's, and those sent inside an acquire (tries,
 * queue looks, leaving the queue) on their own. Every critical section is a hold record for the kit's
 * safety checker (checker.ts).
 */
import { LockHeldError } from '../../../packages/engine/src/errors.js';
import type { Grant } from '../../../packages/engine/src/model.js';
import { seededRandom } from '../../../tools/shared/seeded-random.js';
import { retryDelayMs } from '../../shared/backoff.js';
import { defaultRetry } from '../../shared/defaults.js';
import type { HoldRecord, LockMode, RetryPolicy } from '../../shared/workload.js';
import { checkHolds, type SafetyReport } from '../checker.js';
import { httpAnswer } from '../engine/engine-lock-driver.js';
import { attributeRequests } from '../engine/request-count.js';
import type { EngineTarget } from '../engine/target.js';
import { noRequests, type PerKind } from '../model.js';
import { type WaitCall, type WaitFigures, type WaitMode, waitFigures } from './analysis.js';

export interface WaitingScenario {
  /** Callers, each in a closed loop. */
  callers: number;
  /** Hot locks (document locks `hot-0`...), each call draws one uniformly. */
  keys: number;
  /** Share of calls that read (shared lock); the others write (exclusive). */
  readerShare: number;
  /** Critical section, ms. */
  holdMs: number;
  /** Mean pause after a release before the next arrival (uniform from 0 to twice this), ms. */
  thinkMs: number;
  /** How long a caller may wait for one grant before it gives up, ms. */
  budgetMs: number;
  /** Arrivals start for this long; calls that arrived in time are all seen to their end. */
  seconds: number;
  ttlMs: number;
  /** The polling callers' backoff (budgetMs above replaces its budget). */
  retry: RetryPolicy;
  /** Seeds every caller's draws: the same seed gives both modes the same workload. */
  seed: number;
}

export const DEFAULT_WAITING: Readonly<WaitingScenario> = Object.freeze({
  callers: 24,
  keys: 2,
  readerShare: 0.8,
  holdMs: 20,
  thinkMs: 50,
  budgetMs: 10_000,
  seconds: 20,
  ttlMs: 15_000,
  retry: defaultRetry(),
  seed: 1,
});

export interface WaitingRun {
  figures: WaitFigures;
  calls: WaitCall[];
  safety: SafetyReport;
  /** Lock documents still held in the run's namespace after every caller released (should be 0). */
  leftoverLocks: number;
  errorSamples: string[];
  /** Releases tried again after a busy or unavailable answer (the lock document's write contention). */
  releaseRetries: number;
  /** From the first arrival to the last release, ms. */
  elapsedMs: number;
}

export interface WaitingRunOptions {
  /** Namespace of the run (unique: a run's leftovers never meet the next run). */
  namespace: string;
  /** A line every `progressEveryS` seconds while it runs. */
  progress?: (line: string) => void;
  progressEveryS?: number;
}

/** How a call ended without a grant: its budget ran out, or the engine answered an error (not a busy lock). */
type Ended = 'gave-up' | 'error';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

function diff(after: PerKind, before: PerKind): PerKind {
  const out = noRequests();
  for (const kind of Object.keys(out) as Array<keyof PerKind>) out[kind] = after[kind] - before[kind];
  return out;
}

/** One mode's run of the scenario on `target` (one run at a time per target: the request counts are the client's). */
export async function runWaitingMode(target: EngineTarget, mode: WaitMode, scenario: WaitingScenario, options: WaitingRunOptions): Promise<WaitingRun> {
  const { engine } = target;
  const { namespace } = options;
  const calls: WaitCall[] = [];
  const holds: HoldRecord[] = [];
  const errorSamples: string[] = [];
  let errors = 0;
  let releaseRetries = 0;
  const acquireRequests = noRequests();
  const before = target.requests().byKind;
  const started = Date.now();
  const arrivalsEnd = started + scenario.seconds * 1000;
  const maxWaitMs = engine.settings.maxWaitMs;

  const note = (call: WaitCall, detail: string): void => {
    errors++;
    if (errorSamples.length < 5) errorSamples.push(`${call.key} ${call.mode}: ${detail}`);
  };
  const failed = (call: WaitCall, detail: string): 'error' => {
    note(call, detail);
    call.failedAt = Date.now();
    return 'error';
  };

  const request = (call: WaitCall, waitMs: number) => ({
    namespace,
    granularity: 'document',
    ids: [call.key],
    mode: call.mode,
    owner: `caller-${call.caller}`,
    ttlMs: scenario.ttlMs,
    waitMs,
  });

  /** Tries with waitMs 0 and sleeps the kit's backoff between tries, until the budget. */
  const poll = async (call: WaitCall, deadline: number): Promise<Grant | Ended> => {
    for (let attempt = 0; ; attempt++) {
      call.attempts++;
      try {
        return await engine.acquire(request(call, 0));
      } catch (error) {
        const answer = httpAnswer(error);
        if (answer.kind === 'error') return failed(call, answer.detail);
        const left = deadline - Date.now();
        if (left <= 0) return 'gave-up';
        await sleep(Math.min(left, retryDelayMs(scenario.retry, attempt, answer.retryAfterMs, Math.random)));
      }
    }
  };

  /** Waits in the lock's queue for what is left of the budget (again after a contention answer, which ends a call before it queued). */
  const queue = async (call: WaitCall, deadline: number): Promise<Grant | Ended> => {
    for (let attempt = 0; ; attempt++) {
      const left = deadline - Date.now();
      if (left <= 0) return 'gave-up';
      call.attempts++;
      try {
        return await engine.acquire(request(call, Math.min(maxWaitMs, Math.floor(left))));
      } catch (error) {
        const answer = httpAnswer(error);
        if (answer.kind === 'error') return failed(call, answer.detail);
        if (error instanceof LockHeldError && error.waitedMs > 0 && Date.now() >= deadline) return 'gave-up';
        await sleep(Math.min(deadline - Date.now(), retryDelayMs(scenario.retry, attempt, answer.retryAfterMs, Math.random)));
      }
    }
  };

  /** Releases as the kit's client does: a busy or unavailable answer is tried again with the backoff, within the budget. */
  const release = async (call: WaitCall, grant: Grant): Promise<string> => {
    const deadline = Date.now() + scenario.budgetMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return (await engine.release({ leaseToken: grant.leaseToken })).outcome;
      } catch (error) {
        const answer = httpAnswer(error);
        if (answer.kind === 'error' || Date.now() >= deadline) {
          note(call, `release: ${answer.detail}`);
          return 'error';
        }
        releaseRetries++;
        await sleep(retryDelayMs(scenario.retry, attempt, answer.retryAfterMs, Math.random));
      }
    }
  };

  const runCaller = async (caller: number): Promise<void> => {
    const random = seededRandom(scenario.seed * 100_003 + caller);
    // Callers start spread over one think time, not all in the same millisecond.
    await sleep(random() * 2 * scenario.thinkMs);
    while (Date.now() < arrivalsEnd) {
      const key = `hot-${Math.floor(random() * scenario.keys)}`;
      const lockMode: LockMode = random() < scenario.readerShare ? 'shared' : 'exclusive';
      const thinkMs = random() * 2 * scenario.thinkMs;
      const arrivedAt = Date.now();
      const call: WaitCall = { caller, key, mode: lockMode, arrivedAt, orderAt: arrivedAt, attempts: 0 };
      calls.push(call);
      const deadline = arrivedAt + scenario.budgetMs;
      const grant = await attributeRequests(acquireRequests, () => (mode === 'polling' ? poll(call, deadline) : queue(call, deadline)));
      if (grant === 'gave-up') call.gaveUpAt = Date.now();
      else if (grant !== 'error') {
        call.heldAt = Date.now();
        call.grantedAt = grant.expiresAt - grant.ttlMs;
        if (mode === 'queueing' && grant.waitedMs !== undefined) call.orderAt = call.grantedAt - grant.waitedMs;
        await sleep(scenario.holdMs);
        const end = Date.now();
        const outcome = await release(call, grant);
        holds.push({
          granularity: 'document',
          namespace,
          op: lockMode === 'shared' ? 'read' : 'edit',
          mode: lockMode,
          keys: [key],
          fence: grant.fencingToken,
          start: call.heldAt,
          end,
          expiresAt: grant.expiresAt,
          owner: grant.owner,
          release: outcome,
        });
      }
      await sleep(thinkMs);
    }
  };

  const progressEvery = (options.progressEveryS ?? 5) * 1000;
  const timer = options.progress
    ? setInterval(() => {
        const granted = calls.filter((call) => call.heldAt !== undefined).length;
        const waiting = calls.filter((call) => call.heldAt === undefined && call.gaveUpAt === undefined && call.failedAt === undefined).length;
        const timeouts = calls.filter((call) => call.gaveUpAt !== undefined).length;
        const elapsed = Math.round((Date.now() - started) / 1000);
        const phase = Date.now() < arrivalsEnd ? `${elapsed}/${scenario.seconds} s` : `${elapsed} s, draining`;
        options.progress!(`${mode} ${phase}: ${granted} grants, ${waiting} waiting, ${timeouts} timed out, ${errors} errors`);
      }, progressEvery)
    : undefined;
  try {
    await Promise.all(Array.from({ length: scenario.callers }, (_, caller) => runCaller(caller)));
  } finally {
    if (timer) clearInterval(timer);
  }
  const elapsedMs = Date.now() - started;
  const all = diff(target.requests().byKind, before);
  const leftoverLocks = await target.sweepNamespace(namespace);
  return {
    figures: waitFigures(mode, calls, { all, acquire: acquireRequests }, errors),
    calls,
    safety: checkHolds(holds),
    leftoverLocks,
    errorSamples,
    releaseRetries,
    elapsedMs,
  };
}
