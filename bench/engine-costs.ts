/**
 * What each bench:engine row costs in production terms, measured in the same run as its throughput:
 * requests to the cluster, the cluster's CPU (shared by every caller), the client's CPU (each Lambda's
 * own) and the acquire latency at a fixed moderate load; and the performance goals checked against them.
 */
import type { ClusterCpuMeter } from './lib/cluster-cpu.js';
import type { OpenLoopOutcome } from './lib/open-loop.js';
import { percentile } from './lib/percentile.js';
import type { RequestCounter } from './lib/request-counter.js';
import { type Cycle, type Lock, measure, type Release } from './lib/workers.js';

/** A row of the benchmark: its lock, and the cycle made of it. */
export interface Row {
  name: string;
  lock: Lock;
}

/** What a row spent over its slices. */
export interface RowTotals {
  cycles: number;
  clientCpuMicros: number;
  requests: number;
  clusterCpuMillis: number;
}

export const noTotals = (): RowTotals => ({ cycles: 0, clientCpuMicros: 0, requests: 0, clusterCpuMillis: 0 });

export const addTotals = (a: RowTotals, b: RowTotals): RowTotals => ({
  cycles: a.cycles + b.cycles,
  clientCpuMicros: a.clientCpuMicros + b.clientCpuMicros,
  requests: a.requests + b.requests,
  clusterCpuMillis: a.clusterCpuMillis + b.clusterCpuMillis,
});

export interface Meters {
  /** Counts the requests of the client the rows use. */
  requests: RequestCounter;
  /** Reads the nodes' CPU through a client of its own. */
  cluster: ClusterCpuMeter;
}

/** One slice of a row: its cycles, and what they cost this process, the cluster and in requests. */
export async function measureSlice(cycle: Cycle, seconds: number, concurrency: number, meters: Meters): Promise<RowTotals> {
  const clusterBefore = await meters.cluster.totalMillis();
  const requestsBefore = meters.requests.sent;
  const cpuBefore = process.cpuUsage();
  const cycles = await measure(cycle, seconds, concurrency);
  const cpu = process.cpuUsage(cpuBefore);
  const requests = meters.requests.sent - requestsBefore;
  const clusterCpuMillis = (await meters.cluster.totalMillis()) - clusterBefore;
  return { cycles, clientCpuMicros: cpu.user + cpu.system, requests, clusterCpuMillis };
}

/** The requests of one cycle run alone, acquire and release apart. */
export interface OneCycleRequests {
  acquire: number;
  release: number;
}

/** One cycle with nothing else running: its exact request count, where the rounds give an average. */
export async function requestsOfOneCycle(lock: Lock, counter: RequestCounter): Promise<OneCycleRequests> {
  let release: Release | undefined;
  const acquire = await counter.during(async () => {
    release = await lock(0, 0);
  });
  return { acquire, release: await counter.during(release!) };
}

/** The acquire latency of a row's cycles started at a fixed rate. */
export interface FixedRateLatency {
  ratePerSecond: number;
  acquireP50Ms: number;
  acquireP99Ms: number;
  /** The 99th percentile of how late cycles started: large, the client could not keep the schedule. */
  lateStartP99Ms: number;
  /**
   * The cluster's and this process's CPU per completed cycle at this rate. Every row runs at the same
   * rate here, so the nodes' background work (refreshes, merges, stats) weighs the same per cycle in
   * each, where at saturation it weighs more on the slower rows.
   */
  clusterCpuMicrosPerCycle: number;
  clientCpuMicrosPerCycle: number;
  scheduled: number;
  skipped: number;
  failed: number;
  firstError?: string;
}

/** What a fixed-rate phase used: the cluster's CPU in ms, this process's in µs. */
export interface PhaseCpu {
  clusterCpuMillis: number;
  clientCpuMicros: number;
}

export function latencyOf(outcome: OpenLoopOutcome, ratePerSecond: number, cpu: PhaseCpu): FixedRateLatency {
  const completed = Math.max(1, outcome.scheduled - outcome.skipped - outcome.failed);
  return {
    ratePerSecond,
    clusterCpuMicrosPerCycle: (1_000 * cpu.clusterCpuMillis) / completed,
    clientCpuMicrosPerCycle: cpu.clientCpuMicros / completed,
    acquireP50Ms: percentile(outcome.acquireMs, 50),
    acquireP99Ms: percentile(outcome.acquireMs, 99),
    lateStartP99Ms: percentile(outcome.lateMs, 99),
    scheduled: outcome.scheduled,
    skipped: outcome.skipped,
    failed: outcome.failed,
    ...(outcome.firstError === undefined ? {} : { firstError: outcome.firstError }),
  };
}

/** More than this share of the schedule not started: the row cannot sustain the rate, its latencies are at saturation. */
const OVER_CAPACITY_SHARE = 0.01;

export const overCapacity = (latency: FixedRateLatency): boolean => latency.skipped > OVER_CAPACITY_SHARE * latency.scheduled;

/** One line of progress for a row's fixed-rate phase. */
export function describeLatency(latency: FixedRateLatency): string {
  const problems = [
    overCapacity(latency) ? `over capacity: ${latency.skipped} of ${latency.scheduled} not started` : '',
    latency.failed > 0 ? `${latency.failed} failed (${latency.firstError})` : '',
  ].filter(Boolean);
  return `acquire p50 ${latency.acquireP50Ms.toFixed(1)} ms, p99 ${latency.acquireP99Ms.toFixed(1)} ms, late starts p99 ${latency.lateStartP99Ms.toFixed(1)} ms${problems.length > 0 ? `; ${problems.join('; ')}` : ''}`;
}

/** A row's figures per cycle, as the table and the results file give them. */
export interface RowCosts {
  name: string;
  cyclesPerSecond: number;
  requestsPerCycle: number;
  oneCycleAlone: OneCycleRequests;
  clusterCpuMicrosPerCycle: number;
  clientCpuMicrosPerCycle: number;
  atHalfRawCapacity: FixedRateLatency;
}

export function costsOf(name: string, totals: RowTotals, seconds: number, oneCycleAlone: OneCycleRequests, latency: FixedRateLatency): RowCosts {
  return {
    name,
    cyclesPerSecond: totals.cycles / seconds,
    requestsPerCycle: totals.requests / totals.cycles,
    oneCycleAlone,
    clusterCpuMicrosPerCycle: (1_000 * totals.clusterCpuMillis) / totals.cycles,
    clientCpuMicrosPerCycle: totals.clientCpuMicros / totals.cycles,
    atHalfRawCapacity: latency,
  };
}

/** Each row's costs with their ratios to the raw row's, one line per row. */
export function printCostTable(costs: readonly RowCosts[], raw: RowCosts): void {
  const ratio = (value: number, rawValue: number) => `(${(value / rawValue).toFixed(2)})`;
  const header = [
    'row',
    'cycles/s',
    'requests/cycle',
    'alone',
    'cluster CPU µs/cycle',
    'client CPU µs/cycle',
    'at half raw: cluster / client CPU µs/cycle',
    'acquire p50 / p99 ms',
  ];
  const lines = costs.map((row) => {
    const latency = row.atHalfRawCapacity;
    const mark = overCapacity(latency) || latency.failed > 0 ? ' *' : '';
    return [
      row.name,
      `${row.cyclesPerSecond.toFixed(0)} ${ratio(row.cyclesPerSecond, raw.cyclesPerSecond)}`,
      `${row.requestsPerCycle.toFixed(2)} ${ratio(row.requestsPerCycle, raw.requestsPerCycle)}`,
      `${row.oneCycleAlone.acquire}+${row.oneCycleAlone.release}`,
      `${row.clusterCpuMicrosPerCycle.toFixed(0)} ${ratio(row.clusterCpuMicrosPerCycle, raw.clusterCpuMicrosPerCycle)}`,
      `${row.clientCpuMicrosPerCycle.toFixed(0)} ${ratio(row.clientCpuMicrosPerCycle, raw.clientCpuMicrosPerCycle)}`,
      `${latency.clusterCpuMicrosPerCycle.toFixed(0)} ${ratio(latency.clusterCpuMicrosPerCycle, raw.atHalfRawCapacity.clusterCpuMicrosPerCycle)} / ${latency.clientCpuMicrosPerCycle.toFixed(0)} ${ratio(latency.clientCpuMicrosPerCycle, raw.atHalfRawCapacity.clientCpuMicrosPerCycle)}`,
      `${latency.acquireP50Ms.toFixed(1)} / ${latency.acquireP99Ms.toFixed(1)} ${ratio(latency.acquireP50Ms, raw.atHalfRawCapacity.acquireP50Ms)}${mark}`,
    ];
  });
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => line[column]!.length)));
  const format = (cells: readonly string[]) =>
    cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join('  ');
  console.log(
    `What a cycle costs, with the ratio to "${raw.name}" in brackets. "alone": the requests of one cycle run by itself (acquire+release). Acquire latency: cycles started at ${raw.atHalfRawCapacity.ratePerSecond.toFixed(0)}/s, half the raw row's capacity (the ratio is p50's).`,
  );
  console.log(format(header));
  for (const line of lines) console.log(format(line));
  if (costs.some((row) => overCapacity(row.atHalfRawCapacity) || row.atHalfRawCapacity.failed > 0)) {
    console.log('* could not keep that rate (cycles not started or failed): its latency is at saturation');
  }
}

/** One of the performance goals, against this run's figure. */
export interface Goal {
  label: string;
  value: number;
  shown: string;
  goal: string;
  met: boolean;
}

/** The rows the goals are stated on. */
export interface GoalRows {
  /** Raw create + delete. */
  raw: RowCosts;
  /** Raw create + conditional delete with the engine's ids: the engine's requests without nesting's root read. */
  rawConditional: RowCosts;
  /** The same with the root read in the create's bulk: the engine's requests. */
  rawWithRootRead: RowCosts;
  /** The engine's exclusive document lock, signed tokens (the deployed configuration). */
  document: RowCosts;
}

/** A row's CPU per cycle against raw's, both at half raw's capacity. */
const sameRateRatio = (row: RowCosts, raw: RowCosts, measure: 'clusterCpuMicrosPerCycle' | 'clientCpuMicrosPerCycle'): number =>
  row.atHalfRawCapacity[measure] / raw.atHalfRawCapacity[measure];

export function goalsOf({ raw, rawConditional, rawWithRootRead, document }: GoalRows): Goal[] {
  const clusterRatio = document.clusterCpuMicrosPerCycle / raw.clusterCpuMicrosPerCycle;
  const alone = document.oneCycleAlone;
  const requests = alone.acquire + alone.release;
  // What the root read adds to the raw requests' cluster CPU, against all a document lock costs the cluster.
  const nestingShare = (rawWithRootRead.clusterCpuMicrosPerCycle - rawConditional.clusterCpuMicrosPerCycle) / document.clusterCpuMicrosPerCycle;
  const clientRatio = document.clientCpuMicrosPerCycle / raw.clientCpuMicrosPerCycle;
  return [
    {
      label: 'document lock cluster CPU per cycle / raw',
      value: clusterRatio,
      shown: `${clusterRatio.toFixed(2)}× (at half raw's rate: ${sameRateRatio(document, raw, 'clusterCpuMicrosPerCycle').toFixed(2)}×)`,
      goal: '≤ 1.1×',
      met: clusterRatio <= 1.1,
    },
    {
      label: 'requests per uncontended exclusive document cycle',
      value: requests,
      shown: `${requests} (acquire ${alone.acquire} + release ${alone.release}; raw ${raw.oneCycleAlone.acquire} + ${raw.oneCycleAlone.release}; ${document.requestsPerCycle.toFixed(2)} per cycle over the rounds)`,
      goal: '= 2',
      met: requests === 2,
    },
    {
      label: "nesting's share of a document lock's cluster CPU",
      value: nestingShare,
      shown: `${(100 * nestingShare).toFixed(1)} %`,
      goal: '≤ 5 %',
      met: nestingShare <= 0.05,
    },
    {
      label: 'document lock client CPU per cycle / raw',
      value: clientRatio,
      shown: `${clientRatio.toFixed(2)}× (at half raw's rate: ${sameRateRatio(document, raw, 'clientCpuMicrosPerCycle').toFixed(2)}×)`,
      goal: '≤ 1.5×',
      met: clientRatio <= 1.5,
    },
  ];
}

export function printGoals(goals: readonly Goal[]): void {
  console.log('The performance goals (document lock: signed tokens):');
  const width = Math.max(...goals.map((goal) => goal.label.length));
  for (const goal of goals) console.log(`  ${goal.label.padEnd(width)}  ${goal.shown}  (goal ${goal.goal}: ${goal.met ? 'met' : 'NOT met'})`);
}
