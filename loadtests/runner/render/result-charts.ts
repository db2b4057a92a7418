/** The charts of a workload's results: capacity with error bars, goodput against offered load, acquire latency. */
import type { WorkloadConfig } from '../../shared/workload.js';
import { capacityBounds } from '../ranking.js';
import type { GranularityResult, StageStats } from '../summary.js';
import { type GranularityTrials, groupTrials } from '../trials.js';
import { barChart, lineChart } from './charts.js';

/** Every offered rate measured for a granularity (all trials' probes, or the steady phase alone). */
function pointsOf(results: GranularityResult[], granularity: string, y: (stage: StageStats) => number) {
  const stages = results.filter((r) => r.granularity === granularity).flatMap((r) => (r.ramp.length > 0 ? r.ramp : [r.steady]));
  return stages
    .filter((stage) => stage.acquire.count > 0 || stage.goodput > 0)
    .sort((a, b) => a.offeredRate - b.offeredRate)
    .map((stage) => ({ x: stage.offeredRate, y: y(stage) }));
}

const granularitiesOf = (results: GranularityResult[]): string[] => [...new Set(results.map((r) => r.granularity))];

function unsafeWarning(t: GranularityTrials): { warning?: string } {
  if (t.violations > 0) return { warning: `unsafe: ${t.violations} lock violation(s)` };
  if (t.phantoms > 0) return { warning: `unsafe: ${t.phantoms} semantic conflict(s)` };
  return {};
}

/** Undefined when no capacity search ran. */
export function capacityChart(workload: WorkloadConfig, results: GranularityResult[]): string | undefined {
  const groups = groupTrials(results).filter((t) => t.trials.some((r) => r.capacity));
  if (groups.length === 0) return undefined;
  const trials = Math.max(...groups.map((t) => t.trials.length));
  return barChart({
    title: `Capacity - ${workload.name}`,
    subtitle: `median of ${trials} trial${trials === 1 ? '' : 's'}; whiskers: lowest sustained to highest missed rate`,
    yLabel: 'highest rate meeting the objective (ops/s)',
    bars: ['capacity'],
    // A bar alone would make an unsafe granularity look like the pick; the verdict ranks only safe ones.
    groups: groups.map((t) => ({ name: t.granularity, values: [t.capacity.median], ...unsafeWarning(t) })),
    ranges: groups.map((t) => [capacityBounds(t)]),
  });
}

export function goodputChart(workload: WorkloadConfig, results: GranularityResult[]): string {
  const series = granularitiesOf(results).map((granularity) => ({ name: granularity, points: pointsOf(results, granularity, (s) => s.goodputRate) }));
  const maxOffered = Math.max(0, ...series.flatMap((line) => line.points.map((p) => p.x)));
  return lineChart({
    title: `Goodput against offered load - ${workload.name}`,
    subtitle: 'capacity probes of all trials',
    xLabel: 'offered load (operations/s)',
    yLabel: 'goodput (completed operations/s)',
    series: [
      ...series,
      {
        name: 'offered (ideal)',
        points: [
          { x: 0, y: 0 },
          { x: maxOffered, y: maxOffered },
        ],
        color: '#999999',
        dashed: true,
      },
    ],
  });
}

export function latencyBars(workload: WorkloadConfig, results: GranularityResult[]): string {
  const groups = groupTrials(results);
  return barChart({
    title: `Acquire latency at ${results[0]?.steady.offeredRate ?? '?'} ops/s - ${workload.name}`,
    subtitle: 'median over trials; whiskers: range',
    yLabel: 'time to acquire, incl. retries (ms)',
    bars: ['p50', 'p95', 'p99'],
    groups: groups.map((t) => ({ name: t.granularity, values: [t.acquireP50.median, t.acquireP95.median, t.acquireP99.median] })),
    ranges: groups.map((t) => [t.acquireP50, t.acquireP95, t.acquireP99]),
  });
}

/** Undefined when nothing was measured above the expected rate. */
export function latencyByLoadChart(workload: WorkloadConfig, results: GranularityResult[]): string | undefined {
  if (!results.some((r) => r.ramp.length > 0)) return undefined;
  return lineChart({
    title: `Acquire latency p99 against offered load - ${workload.name}`,
    subtitle: 'capacity probes of all trials',
    xLabel: 'offered load (operations/s)',
    yLabel: 'acquire p99 (ms)',
    series: granularitiesOf(results).map((granularity) => ({ name: granularity, points: pointsOf(results, granularity, (s) => s.acquire.p99) })),
  });
}
