/**
 * The deployment model's check against a cluster it did not see (npm run loadtest:model), as
 * figures. A single capacity search on a 2-core machine is about as noisy as the error the model
 * is held to (±20%), so the check repeats the searches on both sides, interleaved, and compares
 * the prediction from the median calibration with the median measurement; the ranges say how far
 * one search alone could have strayed. Pure.
 */
import { type Calibration, type Deployment, predict, relativeError } from './model.js';
import { type Spread, spreadOf } from './trials.js';

/** One trial of one strategy: calibrated on the single node, measured on the cluster. */
export interface CheckTrial {
  strategy: string;
  single: Calibration;
  cluster: Calibration;
}

export interface CheckRow {
  strategy: string;
  /** Engine-only capacity on the single node, ops/s, over trials. */
  calibrated: Spread;
  /** From the median calibration. */
  predicted: number;
  bound: string;
  /** Engine-only capacity on the cluster, ops/s, over trials. */
  measured: Spread;
  /** |predicted - median measured| / median measured. */
  error: number;
}

const median = (values: number[]): number => spreadOf(values).median;

/** Every figure of the calibration as its median over trials (capacity, requests, times). */
export function medianCalibration(trials: Calibration[]): Calibration {
  const first = trials[0];
  if (!first) throw new Error('medianCalibration needs at least one trial');
  return {
    strategy: first.strategy,
    capacity: median(trials.map((t) => t.capacity)),
    requestsPerOp: median(trials.map((t) => t.requestsPerOp)),
    writeShare: median(trials.map((t) => t.writeShare)),
    esMsPerOp: median(trials.map((t) => t.esMsPerOp)),
    backoffMsPerOp: median(trials.map((t) => t.backoffMsPerOp)),
    criticalSectionMs: first.criticalSectionMs,
  };
}

/** One row per strategy, in the order first measured. */
export function checkRows(trials: CheckTrial[], deployment: Deployment): CheckRow[] {
  const strategies = [...new Set(trials.map((t) => t.strategy))];
  return strategies.map((strategy) => {
    const mine = trials.filter((t) => t.strategy === strategy);
    const prediction = predict(medianCalibration(mine.map((t) => t.single)), deployment);
    const measured = spreadOf(mine.map((t) => t.cluster.capacity));
    return {
      strategy,
      calibrated: spreadOf(mine.map((t) => t.single.capacity)),
      predicted: prediction.capacity,
      bound: prediction.bound,
      measured,
      error: relativeError(prediction.capacity, measured.median),
    };
  });
}

const spreadText = (s: Spread): string => (s.min === s.max ? `${Math.round(s.median)}` : `${Math.round(s.median)} (${Math.round(s.min)}–${Math.round(s.max)})`);

/** The check as a markdown table; the report of every load test quotes the latest one. */
export function checkTable(rows: CheckRow[]): string {
  return [
    '| strategy | 1 node (calibration) | 3 nodes predicted | 3 nodes measured | error | bound |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.strategy} | ${spreadText(r.calibrated)} | ${Math.round(r.predicted)} | ${spreadText(r.measured)} | ${(r.error * 100).toFixed(0)}% | ${r.bound} |`,
    ),
  ].join('\n');
}

/** The order in which a trial visits the two sides: alternated, so neither is always measured first. */
export const sidesInTrial = (trial: number): Array<'single' | 'cluster'> => (trial % 2 === 1 ? ['single', 'cluster'] : ['cluster', 'single']);
