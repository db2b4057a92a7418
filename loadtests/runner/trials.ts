/**
 * Repeated trials of one granularity on one workload, summed up as spreads (median and range) of the
 * figures the verdict uses. Two granularities are told apart on a figure only when their ranges do
 * not overlap; otherwise the difference is within this machine's noise.
 */
import type { Granularity } from '../shared/workload.js';
import type { GranularityResult } from './summary.js';

export interface Spread {
  median: number;
  min: number;
  max: number;
  /** One value per trial, in trial order. */
  values: number[];
}

export function spreadOf(values: number[]): Spread {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, values: [] };
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return { median, min: sorted[0]!, max: sorted.at(-1)!, values };
}

/** The ranges share a point: the trials do not separate the two. */
export const overlaps = (a: Spread, b: Spread): boolean => a.min <= b.max && b.min <= a.max;

export interface GranularityTrials {
  workload: string;
  granularity: Granularity;
  trials: GranularityResult[];
  /** Highest offered rate that met the objective, ops/s. */
  capacity: Spread;
  /** Lowest rate that failed it, per trial (null: never failed up to the search's maximum). */
  failedAt: Array<number | null>;
  /** At the expected rate (--rate). */
  goodputRate: Spread;
  acquireP50: Spread;
  acquireP95: Spread;
  acquireP99: Spread;
  conflictRate: Spread;
  errorRate: Spread;
  /** Every trial's safety check passed (null: none was checked). */
  safe: boolean | null;
  violations: number;
  /** Operations that ran under a directory while another holder renamed it, over all trials. */
  phantoms: number;
}

/** Groups per-trial results by granularity (one workload's results), in the order first measured. */
export function groupTrials(results: GranularityResult[]): GranularityTrials[] {
  const order: Granularity[] = [];
  for (const r of results) if (!order.includes(r.granularity)) order.push(r.granularity);
  return order.map((granularity) => {
    const trials = results.filter((r) => r.granularity === granularity).sort((a, b) => a.trial - b.trial);
    const of = (pick: (r: GranularityResult) => number) => spreadOf(trials.map(pick));
    const checked = trials.filter((r) => r.safety !== null);
    return {
      workload: trials[0]!.workload,
      granularity,
      trials,
      capacity: of((r) => r.capacity?.capacity ?? 0),
      failedAt: trials.map((r) => r.capacity?.failedAt ?? null),
      goodputRate: of((r) => r.steady.goodputRate),
      acquireP50: of((r) => r.steady.acquire.p50),
      acquireP95: of((r) => r.steady.acquire.p95),
      acquireP99: of((r) => r.steady.acquire.p99),
      conflictRate: of((r) => r.steady.conflictRate),
      errorRate: of((r) => r.errorRate),
      safe: checked.length === 0 ? null : checked.every((r) => r.safety!.ok),
      violations: checked.reduce((sum, r) => sum + r.safety!.violationCount, 0),
      phantoms: checked.reduce((sum, r) => sum + (r.safety!.phantomCount ?? 0), 0),
    };
  });
}
