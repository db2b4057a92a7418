/**
 * The deployment model's check against a cluster it did not see (npm run loadtest:model), as
 * figures. A single capacity search on a 2-core machine is about as noisy as the error the model
 * is held to (±20%), so the check repeats the searches on both sides, interleaved, and compares
 * the prediction from the median calibration with the median measurement; the ranges say how far
 * one search alone could have strayed. Pure.
 */
import type { LoadedPrediction } from './loaded-prediction.js';
import { type Calibration, type Deployment, type P99Calibration, type PerKind, perKind, predict, relativeError } from './model.js';
import { type Spread, spreadOf } from './trials.js';

/** One trial of one granularity: calibrated on the single node, measured on the cluster. */
export interface CheckTrial {
  granularity: string;
  single: Calibration;
  cluster: Calibration;
}

export interface CheckRow {
  granularity: string;
  /** Engine-only capacity on the single node, ops/s, over trials. */
  calibrated: Spread;
  /** From the median calibration. */
  predicted: number;
  bound: string;
  /** What the p99 is made of and how much longer it takes on the cluster (see model.ts p99Bound). */
  tail?: { op: string; addedMs: number };
  /** Engine-only capacity on the cluster, ops/s, over trials. */
  measured: Spread;
  /** |predicted - median measured| / median measured. */
  error: number;
  /** How far the odd and even trials' medians lie apart on each side (see halvesApart). */
  halvesApart: { calibrated: number; measured: number };
}

const median = (values: number[]): number => spreadOf(values).median;

/**
 * The check's own repeatability: the medians of the odd and of the even trials, how far apart
 * relative to the median of all (0.25: one half of the trials alone would have moved the figure by
 * 25%). The model cannot be held to a tighter error than this on the machine that measured it.
 * NaN with fewer than two trials.
 */
export function halvesApart(values: number[]): number {
  if (values.length < 2) return Number.NaN;
  const odd = median(values.filter((_, i) => i % 2 === 0));
  const even = median(values.filter((_, i) => i % 2 === 1));
  const all = median(values);
  return all > 0 ? Math.abs(odd - even) / all : Number.NaN;
}

/** Every figure of the calibration as its median over trials (capacity, requests, times). */
export function medianCalibration(trials: Calibration[]): Calibration {
  const first = trials[0];
  if (!first) throw new Error('medianCalibration needs at least one trial');
  return {
    granularity: first.granularity,
    capacity: median(trials.map((t) => t.capacity)),
    requestsPerOp: median(trials.map((t) => t.requestsPerOp)),
    writeShare: median(trials.map((t) => t.writeShare)),
    esMsPerOp: median(trials.map((t) => t.esMsPerOp)),
    backoffMsPerOp: median(trials.map((t) => t.backoffMsPerOp)),
    ...(trials.every((t) => t.requestMix) ? { requestMix: medianPerKind(trials.map((t) => t.requestMix!)) } : {}),
    ...(trials.every((t) => t.perCoveredFile)
      ? {
          perCoveredFile: {
            esMsPerOp: median(trials.map((t) => t.perCoveredFile!.esMsPerOp)),
            requestMix: medianPerKind(trials.map((t) => t.perCoveredFile!.requestMix)),
          },
        }
      : {}),
    criticalSectionMs: first.criticalSectionMs,
    ...(trials.every((t) => t.p99) ? { p99: pooledP99(trials.map((t) => t.p99!)) } : {}),
  };
}

/** Every trial's probes on one trend (more points than one search has); each kind of operation's requests, the median over the trials that ran it. */
function pooledP99(trials: P99Calibration[]): P99Calibration {
  const ops = [...new Set(trials.flatMap((t) => Object.keys(t.requestsByOp)))];
  const ran = (op: string): PerKind[] => trials.flatMap((t) => (t.requestsByOp[op] ? [t.requestsByOp[op]] : []));
  return {
    objectiveMs: trials[0]!.objectiveMs,
    curve: trials.flatMap((t) => t.curve),
    requestsByOp: Object.fromEntries(ops.map((op) => [op, medianPerKind(ran(op))])),
  };
}

/** Each kind's median over the list. */
export const medianPerKind = (list: PerKind[]): PerKind => perKind((kind) => median(list.map((one) => one[kind])));

/**
 * One row per granularity, in the order first measured. With a granularity's `loaded` prediction
 * (the cluster's added latency measured at the rate predicted), that is the prediction; the bound
 * and tail are the model's at that added latency.
 */
export function checkRows(trials: CheckTrial[], deployment: Deployment, loaded: Record<string, LoadedPrediction> = {}): CheckRow[] {
  const granularities = [...new Set(trials.map((t) => t.granularity))];
  return granularities.map((granularity) => {
    const mine = trials.filter((t) => t.granularity === granularity);
    const settled = loaded[granularity];
    const prediction = predict(medianCalibration(mine.map((t) => t.single)), settled ? { ...deployment, addedMs: settled.addedMs } : deployment);
    const predicted = settled?.capacity ?? prediction.capacity;
    const measured = spreadOf(mine.map((t) => t.cluster.capacity));
    return {
      granularity,
      calibrated: spreadOf(mine.map((t) => t.single.capacity)),
      predicted,
      bound: prediction.bound,
      ...(prediction.tail ? { tail: prediction.tail } : {}),
      measured,
      error: relativeError(predicted, measured.median),
      halvesApart: {
        calibrated: halvesApart(mine.map((t) => t.single.capacity)),
        measured: halvesApart(mine.map((t) => t.cluster.capacity)),
      },
    };
  });
}

const percent = (share: number): string => (Number.isNaN(share) ? '-' : `${(share * 100).toFixed(0)}%`);

const spreadText = (s: Spread): string => (s.min === s.max ? `${Math.round(s.median)}` : `${Math.round(s.median)} (${Math.round(s.min)}–${Math.round(s.max)})`);

const tailText = (tail: CheckRow['tail']): string => (tail ? `${tail.op} +${Math.round(tail.addedMs)} ms` : '-');

/** The check as a markdown table; the report of every load test quotes the latest one. */
export function checkTable(rows: CheckRow[]): string {
  return [
    '| granularity | 1 node (calibration) | 3 nodes predicted | 3 nodes measured | error | halves apart (1 node / 3 nodes) | p99 tail on 3 nodes | bound |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.granularity} | ${spreadText(r.calibrated)} | ${Math.round(r.predicted)} | ${spreadText(r.measured)} | ${percent(r.error)} | ` +
        `${percent(r.halvesApart.calibrated)} / ${percent(r.halvesApart.measured)} | ${tailText(r.tail)} | ${r.bound} |`,
    ),
  ].join('\n');
}

/**
 * The check's verdict in one sentence: within the target for every granularity, or which miss it and
 * whether the trials pinned the figures down well enough to tell (halves apart above the target).
 */
export function checkVerdict(rows: CheckRow[], target = 0.2): string {
  const misses = rows.filter((r) => !(r.error <= target));
  if (misses.length === 0) return `Within ±${percent(target)} for every granularity: yes.`;
  const noisy = misses.filter((r) => Math.max(r.halvesApart.calibrated, r.halvesApart.measured) > target);
  const named = misses.map((r) => `${r.granularity} ${percent(r.error)}`).join(', ');
  const because =
    noisy.length > 0
      ? ` For ${noisy.map((r) => r.granularity).join(', ')} the two halves of the trials already differ by more than that: more trials (--trials) would tell.`
      : '';
  return `Within ±${percent(target)} for every granularity: no (${named}).${because}`;
}

/** The order in which a trial visits the two sides: alternated, so neither is always measured first. */
export const sidesInTrial = (trial: number): Array<'single' | 'cluster'> => (trial % 2 === 1 ? ['single', 'cluster'] : ['cluster', 'single']);
