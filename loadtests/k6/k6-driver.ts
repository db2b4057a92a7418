/**
 * The k6 side of the one iteration (shared/iteration.ts): the HTTP API as its LockDriver, k6's clock
 * and blocking sleep, and its reports as k6 custom metrics and hold lines on k6's console. The
 * metrics' names are the kit's (the summary and the orchestrator read them); their tags are the
 * operation's `stage` and `op`.
 */
import { sleep } from 'k6';
import { Counter, Rate, Trend } from 'k6/metrics';
import type { IterationDriver, IterationEnd, IterationMetrics, LockDriver, OpTags } from '../shared/lock-driver.ts';
import { HOLD_MARKER, type HoldRecord } from '../shared/workload.ts';

// Created at module load, which is k6's init context, the only place k6 allows it.
const offered = new Counter('ops_offered');
const goodput = new Counter('goodput');
const gaveUp = new Counter('gave_up');
const conflicts = new Counter('conflicts');
const retries = new Counter('retries');
const errorCount = new Counter('error_count');
const errors = new Rate('errors');
const conflictRate = new Rate('conflict_rate');
const acquireLatency = new Trend('acquire_latency', true);
const acquireRequest = new Trend('acquire_request', true);
const opDuration = new Trend('op_duration', true);
const releaseNotReleased = new Counter('release_not_released');

/** A few samples per VU are enough to diagnose a failing run; the counters carry the totals. */
const PROBLEMS_PER_VU = 3;

function k6Metrics(granularity: string): IterationMetrics {
  let problems = 0;
  return {
    offered: (tags) => offered.add(1, tags),
    answered(answer, tags) {
      acquireRequest.add(answer.durationMs, tags);
      conflictRate.add(answer.kind === 'conflict', tags);
      if (answer.kind === 'conflict') conflicts.add(1, tags);
    },
    retried: (_delayMs, tags) => retries.add(1, tags),
    acquired: (latencyMs, tags) => acquireLatency.add(latencyMs, tags),
    held: (record: HoldRecord) => console.log(HOLD_MARKER + JSON.stringify(record)),
    ended: (end, tags) => count(end, tags),
    problem(what, detail) {
      if (problems++ < PROBLEMS_PER_VU) console.error(`LTERROR ${granularity} ${what}: ${detail}`);
    },
  };
}

/** `errors` has one sample per operation that ended; giving up after conflicts is not an error. */
function count(end: IterationEnd, tags: OpTags): void {
  if (end.outcome === 'interrupted') return;
  opDuration.add(end.durationMs, tags);
  switch (end.outcome) {
    case 'done':
      errors.add(false, tags);
      goodput.add(1, tags);
      if (end.release !== 'released') releaseNotReleased.add(1, { ...tags, outcome: end.release });
      return;
    case 'gave-up':
      errors.add(false, tags);
      gaveUp.add(1, tags);
      return;
    case 'error':
      errors.add(true, tags);
      errorCount.add(1, { ...tags, status: String(end.status) });
      return;
    case 'release-failed':
      errors.add(true, tags);
      errorCount.add(1, { ...tags, status: 'release' });
      return;
  }
}

/** The iteration's driver in a k6 VU. k6 interrupts iterations itself (gracefulStop), so the run never says stop. */
export function k6Driver(locks: LockDriver, granularity: string): IterationDriver {
  return {
    locks,
    metrics: k6Metrics(granularity),
    now: () => Date.now(),
    sleep(ms) {
      sleep(ms / 1000);
      return Promise.resolve();
    },
    random: Math.random,
    stopped: () => false,
  };
}
