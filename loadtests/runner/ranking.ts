/**
 * Which granularity wins one workload, from measured numbers only: no wording here (that is
 * render/recommendation.ts), so the decision can be read and tested on its own.
 *
 * Unsafe granularities are out first: a safety violation in any trial, or semantic conflicts the
 * locks did not cover for this workload (an operation under a directory being renamed, such as a
 * file created there, which document locks cannot see). Then those with 1% or more errors.
 * The rest are ranked by capacity (the highest offered rate that met the objective, median over
 * trials). A granularity wins on capacity only when its range lies above every other's; where ranges
 * overlap, acquire latency at the expected rate may still separate them (again only without
 * overlap, and by more than a couple of ms); otherwise the verdict is a tie within noise.
 */
import type { GranularityResult } from './summary.js';
import { type GranularityTrials, groupTrials, overlaps, type Spread } from './trials.js';

/** Below this error rate (median over trials) a granularity counts as clean. */
const ERROR_RATE_LIMIT = 0.01;
/** Latency differences smaller than this (ms, or relative) say nothing at a light load. */
const LATENCY_FLOOR_MS = 2;
const LATENCY_FLOOR_RATIO = 0.1;

export type Decision =
  | { kind: 'none' }
  /** No measured figure separates these beyond the trials' spread. */
  | { kind: 'tie'; field: GranularityTrials[] }
  /** `closest` is the best of the others on `basis` (null when no other granularity was eligible). */
  | { kind: 'winner'; winner: GranularityTrials; basis: 'capacity' | 'latency'; closest: GranularityTrials | null };

export interface Ranking {
  /** Excluded: the safety checker found violations. */
  unsafe: GranularityTrials[];
  /** Excluded: safe locks, but operations ran under directories being renamed (unsafe for this workload). */
  phantoms: GranularityTrials[];
  /** Excluded: safe, but 1% or more of the operations failed (median over trials). */
  failing: GranularityTrials[];
  eligible: GranularityTrials[];
  /** The eligible, best first: capacity, then acquire p95 at the expected rate. */
  ranked: GranularityTrials[];
  /** Trials per granularity (the fewest any granularity had). */
  trials: number;
  decision: Decision;
}

/**
 * Where a granularity's capacity lies over all its trials: from the lowest rate it sustained to the
 * highest rate it failed at (each trial's true capacity is somewhere in [sustained, failed)).
 */
export function capacityBounds(t: GranularityTrials): Spread {
  const upper = Math.max(...t.trials.map((r) => r.capacity?.failedAt ?? r.capacity?.capacity ?? 0));
  return { median: t.capacity.median, min: t.capacity.min, max: Math.max(upper, t.capacity.max), values: t.capacity.values };
}

const byCapacity = (a: GranularityTrials, b: GranularityTrials): number => b.capacity.median - a.capacity.median;
const byP95 = (a: GranularityTrials, b: GranularityTrials): number => a.acquireP95.median - b.acquireP95.median;

export function rank(results: GranularityResult[]): Ranking {
  const groups = groupTrials(results);
  const unsafe = groups.filter((g) => g.safe === false);
  const phantoms = groups.filter((g) => !unsafe.includes(g) && g.phantoms > 0);
  const failing = groups.filter((g) => !unsafe.includes(g) && !phantoms.includes(g) && g.errorRate.median >= ERROR_RATE_LIMIT);
  const eligible = groups.filter((g) => !unsafe.includes(g) && !phantoms.includes(g) && !failing.includes(g));
  const ranked = [...eligible].sort((a, b) => byCapacity(a, b) || byP95(a, b));
  const trials = groups.length > 0 ? Math.min(...groups.map((g) => g.trials.length)) : 0;
  return { unsafe, phantoms, failing, eligible, ranked, trials, decision: decide(ranked) };
}

function decide(ranked: GranularityTrials[]): Decision {
  const best = ranked[0];
  if (!best) return { kind: 'none' };
  const others = ranked.slice(1);
  if (others.length === 0) return { kind: 'winner', winner: best, basis: 'capacity', closest: null };
  const bestBounds = capacityBounds(best);
  const field = [best, ...others.filter((other) => overlaps(capacityBounds(other), bestBounds))];
  if (field.length === 1) return { kind: 'winner', winner: best, basis: 'capacity', closest: others[0]! };
  const byLatency = [...field].sort(byP95);
  const fastest = byLatency[0]!;
  const separated = byLatency.slice(1).every((other) => {
    const gap = other.acquireP95.median - fastest.acquireP95.median;
    return !overlaps(other.acquireP95, fastest.acquireP95) && gap > Math.max(LATENCY_FLOOR_MS, LATENCY_FLOOR_RATIO * other.acquireP95.median);
  });
  if (separated) return { kind: 'winner', winner: fastest, basis: 'latency', closest: byLatency[1]! };
  return { kind: 'tie', field };
}
