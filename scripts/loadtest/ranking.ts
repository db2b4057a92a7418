/**
 * Which strategy wins one workload, from measured numbers only: no wording here (that is
 * render/recommendation.ts), so the decision can be read and tested on its own.
 *
 * Unsafe runs and runs with 1% or more errors are out. The rest are ranked by steady goodput; when
 * several tie on it, the ramp's peak goodput decides, then acquire p95; latencies too close to
 * matter make it a tie.
 */
import type { StrategyResult } from './summary.js';

/** Goodputs closer than this (relative) count as a tie. */
export const TIE_RATIO = 0.05;
/** Below this error rate a run counts as clean. */
const ERROR_RATE_LIMIT = 0.01;

export type Decision =
  | { kind: 'none' }
  /** The tied strategies could not be separated even by latency. */
  | { kind: 'tie'; field: StrategyResult[] }
  | { kind: 'winner'; winner: StrategyResult; basis: 'goodput' }
  /** Tied on goodput and won on `basis`; `closest` is the best of the others on that measure. */
  | { kind: 'winner'; winner: StrategyResult; basis: 'peak' | 'latency'; closest: StrategyResult };

export interface Ranking {
  /** Excluded: the safety checker found violations. */
  unsafe: StrategyResult[];
  /** Excluded: safe, but 1% or more of the operations failed. */
  failing: StrategyResult[];
  /** The rest, in the order measured. */
  eligible: StrategyResult[];
  /** The eligible, best first: steady goodput, then ramp peak goodput, then acquire p95. */
  ranked: StrategyResult[];
  /** Those within TIE_RATIO of the best steady goodput (the best included). */
  tiedOnGoodput: StrategyResult[];
  /** The steady phase's offered load, ops/s (0 when nothing is eligible). */
  offered: number;
  decision: Decision;
}

const close = (a: number, b: number): boolean => Math.abs(a - b) <= TIE_RATIO * Math.max(a, b);
const byGoodput = (a: StrategyResult, b: StrategyResult): number => b.steady.goodputRate - a.steady.goodputRate;
const byPeak = (a: StrategyResult, b: StrategyResult): number => b.saturation.peakGoodputRate - a.saturation.peakGoodputRate;
const byP95 = (a: StrategyResult, b: StrategyResult): number => a.steady.acquire.p95 - b.steady.acquire.p95;
const first = (candidates: StrategyResult[], order: (a: StrategyResult, b: StrategyResult) => number): StrategyResult => [...candidates].sort(order)[0]!;

export function rank(results: StrategyResult[]): Ranking {
  const unsafe = results.filter((r) => r.safety && !r.safety.ok);
  const failing = results.filter((r) => !unsafe.includes(r) && r.errorRate >= ERROR_RATE_LIMIT);
  const eligible = results.filter((r) => !unsafe.includes(r) && !failing.includes(r) && r.steady.offered > 0);
  const ranked = [...eligible].sort((a, b) => byGoodput(a, b) || byPeak(a, b) || byP95(a, b));
  const best = ranked[0];
  const base = { unsafe, failing, eligible, ranked, offered: best?.steady.offeredRate ?? 0 };
  if (!best) return { ...base, tiedOnGoodput: [], decision: { kind: 'none' } };
  const tiedOnGoodput = ranked.filter((r) => close(r.steady.goodputRate, best.steady.goodputRate));
  return { ...base, tiedOnGoodput, decision: decide(best, tiedOnGoodput) };
}

function decide(best: StrategyResult, tiedOnGoodput: StrategyResult[]): Decision {
  if (tiedOnGoodput.length === 1) return { kind: 'winner', winner: best, basis: 'goodput' };
  let latencyField = tiedOnGoodput;
  if (tiedOnGoodput.every((r) => r.saturation.measured)) {
    const byPeakFirst = [...tiedOnGoodput].sort(byPeak);
    const top = byPeakFirst[0]!;
    const tiedOnPeak = byPeakFirst.filter((r) => close(r.saturation.peakGoodputRate, top.saturation.peakGoodputRate));
    if (tiedOnPeak.length === 1) return { kind: 'winner', winner: top, basis: 'peak', closest: first(others(tiedOnGoodput, top), byPeak) };
    latencyField = tiedOnPeak;
  }
  const fastest = first(latencyField, byP95);
  const second = first(others(latencyField, fastest), byP95);
  // Latencies a couple of ms apart at a light load say nothing: call it a tie.
  if (second.steady.acquire.p95 - fastest.steady.acquire.p95 <= Math.max(2, TIE_RATIO * 2 * second.steady.acquire.p95)) {
    return { kind: 'tie', field: latencyField };
  }
  return { kind: 'winner', winner: fastest, basis: 'latency', closest: first(others(tiedOnGoodput, fastest), byP95) };
}

const others = (candidates: StrategyResult[], one: StrategyResult): StrategyResult[] => candidates.filter((r) => r !== one);
