/**
 * Default workload and run settings, shared by the k6 script (when run by hand) and the orchestrator.
 * Sized for a 2-core machine running Elasticsearch, serverless-offline and k6 at once: tens to a
 * few hundred operations per second, so the run measures the locks rather than the harness.
 */
import type { Objective } from './objective.ts';
import type { Granularity, K6RunConfig, RetryPolicy, WorkloadConfig } from './workload.ts';

export function defaultWorkload(): WorkloadConfig {
  return {
    name: 'default',
    // 3 top-level directories, 3 levels deep, 4 files per directory: 39 directories, 156 files,
    // and a top-level rename locks 52 documents.
    tree: { depth: 3, fanout: 3, filesPerDir: 4, seed: 42 },
    // Creates and deletes: a document lock cannot cover a file that does not exist yet (the phantom).
    mix: { read: 67, edit: 23, rename: 5, create: 3, delete: 2 },
    criticalSectionMs: 20,
    skew: { kind: 'hotspot', hotFraction: 0.1, hotTraffic: 0.9 },
  };
}

export function defaultRetry(): RetryPolicy {
  return { budgetMs: 3000, baseDelayMs: 10, maxDelayMs: 200, honourRetryAfter: true };
}

export interface Schedule {
  steady: K6RunConfig['steady'];
  ramp: Omit<K6RunConfig['ramp'], 'startAfterS'>;
  vus: K6RunConfig['vus'];
  gracefulStopS: number;
}

export function defaultSchedule(): Schedule {
  return {
    // The expected rate: latency and goodput there. Capacity is searched for separately (probes).
    steady: { rate: 60, durationS: 8 },
    ramp: { levels: [], stepS: 8, transitionS: 0 },
    // Each VU has at most one request in flight. The local stack serves the handlers in process
    // (scripts/stack.ts `inProcess`), so 100 VUs cost little; past the ceiling k6 drops iterations
    // (reported), which is how an overloaded granularity shows. With LOADTEST_LAMBDA_WORKERS=1 (a worker
    // started per concurrent request, seconds of CPU each here) use --max-vus 40 or less.
    vus: { preAllocated: 20, max: 100 },
    gracefulStopS: 4,
  };
}

/** A few seconds per granularity: proves the kit works end to end (used by CI). */
export function smokeSchedule(): Schedule {
  return {
    steady: { rate: 10, durationS: 3 },
    ramp: { levels: [], stepS: 2, transitionS: 0 },
    vus: { preAllocated: 5, max: 20 },
    gracefulStopS: 3,
  };
}

/** Pause between the end of the steady phase and the start of the ramp, so leftovers drain. */
export const RAMP_PAUSE_S = 2;

export function runConfig(args: {
  runId: string;
  granularity: Granularity;
  namespace: string;
  workload: WorkloadConfig;
  schedule: Schedule;
  retry: RetryPolicy;
  ttlMs: number;
  objective: Objective;
}): K6RunConfig {
  const { schedule } = args;
  return {
    runId: args.runId,
    granularity: args.granularity,
    namespace: args.namespace,
    workload: args.workload,
    steady: schedule.steady,
    ramp: { ...schedule.ramp, startAfterS: schedule.steady.durationS + RAMP_PAUSE_S },
    retry: args.retry,
    ttlMs: args.ttlMs,
    objective: args.objective,
    vus: schedule.vus,
    gracefulStopS: schedule.gracefulStopS,
  };
}
