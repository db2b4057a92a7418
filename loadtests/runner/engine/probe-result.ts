/** An engine probe's figures, from its tally and its arrivals: the stage as k6's summary gives one, the verdict, the store requests. */

import { judge, type Objective, type ProbeVerdict } from '../../shared/objective.js';
import { checkHolds, parseHoldLog, type SafetyReport } from '../checker.js';
import { type PerKind, perKind } from '../model.js';
import type { Latency, StageStats } from '../summary.js';
import type { ArrivalStats } from './arrivals.js';
import type { RequestCounts } from './request-count.js';
import type { ProbeTally } from './tally.js';

export interface EngineProbeResult {
  verdict: ProbeVerdict;
  /** The probe as a stage, as summary.ts reads one from k6 (stage `engine-probe<rate>`). */
  stage: StageStats;
  /** Arrivals that found every slot busy (k6's dropped_iterations). */
  dropped: number;
  /** Operations still running at the end of the grace: offered, counted as nothing else. */
  interrupted: number;
  namespace: string;
  /** One line per critical section, `LTHOLD {json}` as k6 logs it. */
  holdLines: string[];
  /** The checker's verdict on holdLines (read back with parseHoldLog). */
  safety: SafetyReport;
  /** Elasticsearch requests the probe's operations sent (acquire, retries, release). */
  esRequests: number;
  /** Of those, the writes (bulk, index, create, delete): the ones replicas repeat. */
  esWrites: number;
  /** The same requests by kind (writes, reads, refreshes, searches), as the deployment model weighs them. */
  esRequestsByKind: PerKind;
  /** Requests of one completed operation of each kind (read, edit, rename, ...): what the deployment model's p99 tail is made of. */
  requestsByOp: Record<string, PerKind>;
  /** Mean latency of each kind of request during the probe, ms: the per-kind latency under this load (the model's probe measures it idle). */
  esMsByKind: PerKind;
  /** Mean time a completed operation spent in engine calls (acquire and release, backoff excluded), ms. */
  esMsPerOp: number;
  /** Mean backoff wait per completed operation, ms. */
  backoffMsPerOp: number;
  /**
   * The same figures per completed operation, each operation weighted by the files its lock covers
   * (a rename of a directory of 40 files counts 40 times): what another operation's acquire is
   * likely to run into, so what contention is made of. The deployment model scales the hold time by
   * these (model.ts), since a directory lock's slow refresh holds many files out at once.
   */
  perCoveredFile: { esMsPerOp: number; requestMix: PerKind };
  /** How late arrivals started against their due time (this process's own limit), ms. */
  schedule: { lagP99Ms: number; lagMaxMs: number; peakInFlight: number };
  /** Lock documents that still had a holder after every operation had finished (the namespace's documents are then deleted). */
  leftoverLocks: number;
  /** A few failed acquires or releases, in words (the totals are in stage.errors). */
  errorSamples: string[];
}

/** k6's trend percentile: linear interpolation between the sorted samples. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const at = (p / 100) * (sorted.length - 1);
  const low = Math.floor(at);
  const high = Math.min(sorted.length - 1, low + 1);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

function latencyOf(values: number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), count: sorted.length };
}

type Requests = RequestCounts;

/** Requests of one completed operation of each kind (read, edit, rename, ...), by kind of request. */
export function requestsByOpOf(byOp: ProbeTally['byOp']): Record<string, PerKind> {
  return Object.fromEntries(Object.entries(byOp).map(([op, { done, requests }]) => [op, perKind((kind) => requests[kind] / done)]));
}

export function probeResult(probe: {
  rate: number;
  seconds: number;
  namespace: string;
  objective: Objective;
  tally: ProbeTally;
  arrivals: ArrivalStats;
  /** The target's request counts before and after the probe. */
  before: Requests;
  after: Requests;
  leftoverLocks: number;
}): EngineProbeResult {
  const { rate, tally, arrivals, before, after } = probe;
  const acquire = latencyOf(tally.acquireMs);
  const stage: StageStats = {
    stage: `engine-probe${rate}`,
    offeredRate: rate,
    offered: tally.offered,
    goodput: tally.goodput,
    goodputRate: tally.goodput / probe.seconds,
    gaveUp: tally.gaveUp,
    conflicts: tally.conflicts,
    retries: tally.retries,
    errors: tally.errors,
    conflictRate: tally.acquireRequests > 0 ? tally.conflicts / tally.acquireRequests : 0,
    acquire,
  };
  // k6's `errors` rate: one sample per operation that reached an end (done, gave up, or failed).
  const ended = tally.goodput + tally.gaveUp + tally.errors;
  const verdict = judge(
    { rate, goodputRate: stage.goodputRate, acquireP99: acquire.p99, errorRate: ended > 0 ? tally.errors / ended : 0, dropped: arrivals.dropped },
    probe.objective,
  );
  const done = Math.max(1, tally.goodput);
  const lags = [...arrivals.lagsMs].sort((a, b) => a - b);
  const { covered } = tally;
  return {
    verdict,
    stage,
    dropped: arrivals.dropped,
    interrupted: tally.interrupted,
    namespace: probe.namespace,
    holdLines: tally.holdLines,
    safety: checkHolds(parseHoldLog(tally.holdLines.join('\n')).holds),
    requestsByOp: requestsByOpOf(tally.byOp),
    esRequests: after.total - before.total,
    esWrites: after.byKind.write - before.byKind.write,
    esRequestsByKind: perKind((kind) => after.byKind[kind] - before.byKind[kind]),
    esMsByKind: perKind((kind) => {
      const count = after.answered.count[kind] - before.answered.count[kind];
      return count > 0 ? (after.answered.ms[kind] - before.answered.ms[kind]) / count : 0;
    }),
    esMsPerOp: tally.engineMs / done,
    backoffMsPerOp: tally.backoffMs / done,
    perCoveredFile: {
      esMsPerOp: covered.files > 0 ? covered.engineMs / covered.files : 0,
      requestMix: perKind((kind) => (covered.files > 0 ? covered.requests[kind] / covered.files : 0)),
    },
    schedule: { lagP99Ms: percentile(lags, 99), lagMaxMs: lags.at(-1) ?? 0, peakInFlight: arrivals.peakInFlight },
    leftoverLocks: probe.leftoverLocks,
    errorSamples: tally.errorSamples,
  };
}
