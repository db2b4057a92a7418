/**
 * The engine driver: the lock layer measured alone. The kit's one iteration (shared/iteration.ts),
 * the same the k6 script runs over HTTP, through a LockService in this process (no HTTP, no
 * serverless-offline) on the same lock store (Elasticsearch or OpenSearch). A probe offers one rate
 * in an open model (arrivals.ts), is judged by the same objective (shared/objective.ts), and its
 * critical sections by the same safety checker (hold lines in the k6 format), so a report can set
 * the capacity the locks allow beside the capacity through the functions on the local HTTP stack.
 *
 *   grace      operations still running `gracefulStopS` after the last arrival's second (2 s, as the
 *              kit's probes) count for nothing, like iterations k6 interrupts; unlike k6 they are
 *              still released (and their holds checked) before the probe returns.
 *   isolation  every probe gets a namespace of its own (`lt-e-<granularity>-<runId>-p<n>`): leftovers of
 *              a probe cannot conflict with the next one. After a probe every operation has finished
 *              (and released); lock documents still held in its namespace are counted (`leftoverLocks`,
 *              normally 0) and the namespace is swept (target.ts). The HTTP kit keeps one namespace
 *              per run, so its later probes find the tree granularity's ancestor markers already written;
 *              here each probe writes them again (measured: tree +0.1-0.2 writes per operation at
 *              150 ops/s over 3 s, within the noise of p99).
 */
import { readFileSync } from 'node:fs';
import { type IterationPlan, runIteration } from '../../shared/iteration.js';
import type { IterationDriver } from '../../shared/lock-driver.js';
import type { Objective } from '../../shared/objective.js';
import { userWorkloadOf } from '../../shared/user-workload.js';
import { type Granularity, operationSource, type RetryPolicy, type WorkloadConfig } from '../../shared/workload.js';
import { noRequests } from '../model.js';
import { runArrivals } from './arrivals.js';
import { engineLockDriver } from './engine-lock-driver.js';
import { type EngineProbeResult, probeResult } from './probe-result.js';
import { attributeRequests } from './request-count.js';
import { ProbeTally } from './tally.js';
import type { EngineTarget } from './target.js';

/** The kit's probes give in-flight iterations this long after the last second (granularity-run.ts runProbe). */
export const PROBE_GRACEFUL_STOP_S = 2;

export interface EngineDriverOptions {
  target: EngineTarget;
  granularity: Granularity;
  workload: WorkloadConfig;
  retry: RetryPolicy;
  ttlMs: number;
  /** Seconds each probe offers its rate. */
  probeS: number;
  /** In-flight ceiling (k6's maxVUs). */
  maxInFlight: number;
  objective: Objective;
  /** Names the owners and namespaces (a run id: letters, digits, `.`, `_`, `-`). */
  runId: string;
  /** Grace after the last second for operations still running (default PROBE_GRACEFUL_STOP_S). */
  gracefulStopS?: number;
  /** Default Math.random, as in k6. */
  random?: () => number;
}

/** A probe's namespace: unique per probe, within the 64 characters a namespace may have. */
export function probeNamespace(granularity: Granularity, runId: string, probe: number): string {
  const suffix = `-p${probe}`;
  const head = `lt-e-${granularity}-${runId}`.replace(/[^A-Za-z0-9._:-]/g, '-');
  return `${head.slice(0, 64 - suffix.length)}${suffix}`;
}

/** Epoch ms with the sub-millisecond precision of the monotonic clock: latencies and hold times alike. */
const now = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** One probe: `rate` arrivals per second for options.probeS seconds, then the grace; every operation has ended when it returns. */
export async function driveEngine(options: EngineDriverOptions, rate: number): Promise<EngineProbeResult> {
  const { target, granularity, workload, probeS } = options;
  const random = options.random ?? Math.random;
  const namespace = probeNamespace(granularity, options.runId, target.nextProbe());
  const plan: IterationPlan = {
    granularity,
    namespace,
    ttlMs: options.ttlMs,
    retry: options.retry,
    criticalSectionMs: workload.criticalSectionMs,
    operations: operationSource(
      workload,
      userWorkloadOf(workload, (file) => readFileSync(file, 'utf8')),
    ),
  };
  const locks = engineLockDriver(target.engine);
  const tally = new ProbeTally();
  let stopped = false;
  const grace = setTimeout(
    () => {
      stopped = true;
    },
    (probeS + (options.gracefulStopS ?? PROBE_GRACEFUL_STOP_S)) * 1000,
  );
  const before = target.requests();
  const arrivals = await runArrivals({ rate, seconds: probeS, slots: options.maxInFlight }, async (slot, index) => {
    const requests = noRequests();
    const driver: IterationDriver = { locks, metrics: tally.forOperation(requests), now, sleep, random, stopped: () => stopped };
    const owner = `${options.runId}-${granularity}-vu${slot}`;
    try {
      await attributeRequests(requests, () => runIteration(driver, plan, { index, stage: 'steady', owner, requestId: `${owner}-steady-${index}` }));
    } catch (error) {
      // Not an answer of the engine (the lock driver classifies those): this driver's own failure, counted as an error.
      tally.errors++;
      tally.sample(`driver: ${(error as Error).message}`);
    }
  });
  clearTimeout(grace);
  const after = target.requests();
  const leftoverLocks = await target.sweepNamespace(namespace);
  return probeResult({ rate, seconds: probeS, namespace, objective: options.objective, tally, arrivals, before, after, leftoverLocks });
}
