/** The charts of a workload's results: goodput against offered load, acquire latency percentiles and p95 by load. */
import type { WorkloadConfig } from '../../../loadtests/lib/workload.js';
import type { StrategyResult } from '../summary.js';
import { barChart, lineChart } from './charts.js';

export function goodputChart(workload: WorkloadConfig, results: StrategyResult[]): string {
  // Without a ramp the steady phase is the only point.
  const pointsOf = (r: StrategyResult) => (r.ramp.length > 0 ? r.ramp : [r.steady]).map((s) => ({ x: s.offeredRate, y: s.goodputRate }));
  const maxOffered = Math.max(0, ...results.flatMap((r) => pointsOf(r).map((p) => p.x)));
  return lineChart({
    title: `Goodput against offered load - ${workload.name}`,
    xLabel: 'offered load (operations/s)',
    yLabel: 'goodput (completed operations/s)',
    series: [
      ...results.map((r) => ({ name: r.strategy, points: pointsOf(r) })),
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

export function latencyBars(workload: WorkloadConfig, results: StrategyResult[]): string {
  return barChart({
    title: `Acquire latency at ${results[0]?.steady.offeredRate ?? '?'} ops/s (steady) - ${workload.name}`,
    yLabel: 'time to acquire, incl. retries (ms)',
    bars: ['p50', 'p95', 'p99'],
    groups: results.map((r) => ({ name: r.strategy, values: [r.steady.acquire.p50, r.steady.acquire.p95, r.steady.acquire.p99] })),
  });
}

/** Undefined when no strategy had a ramp. */
export function latencyByLoadChart(workload: WorkloadConfig, results: StrategyResult[]): string | undefined {
  if (!results.some((r) => r.ramp.length > 0)) return undefined;
  return lineChart({
    title: `Acquire latency p95 against offered load - ${workload.name}`,
    xLabel: 'offered load (operations/s)',
    yLabel: 'acquire p95 (ms)',
    series: results.map((r) => ({ name: r.strategy, points: r.ramp.filter((s) => s.acquire.count > 0).map((s) => ({ x: s.offeredRate, y: s.acquire.p95 })) })),
  });
}
