/**
 * Turns the k6 summaries and safety results into numbers, a recommendation, report.md, report.html
 * and goodput.svg. Everything here is pure (no I/O) so it can be unit-tested.
 */
import type { Strategy, WorkloadConfig } from '../../loadtests/lib/workload.js';
import { barChart, escapeXml, lineChart } from './charts.js';
import { describeSkew, mixPercentages, type LoadtestConfig } from './config.js';

/** A level "keeps up" while goodput stays at or above this share of the offered load. */
export const KEEP_UP_RATIO = 0.9;
/** Goodputs closer than this (relative) count as a tie. */
export const TIE_RATIO = 0.05;

interface SummaryMetric {
  type?: string;
  values: Record<string, number>;
  thresholds?: Record<string, { ok: boolean }>;
}

export interface K6Summary {
  metrics: Record<string, SummaryMetric | undefined>;
}

export interface Latency {
  p50: number;
  p95: number;
  p99: number;
  count: number;
}

export interface StageStats {
  stage: string;
  /** Nominal offered load of the stage, operations/s. */
  offeredRate: number;
  offered: number;
  goodput: number;
  goodputRate: number;
  gaveUp: number;
  conflicts: number;
  retries: number;
  errors: number;
  /** Share of acquire requests answered 409. */
  conflictRate: number;
  acquire: Latency;
}

export interface SafetySummary {
  ok: boolean;
  holds: number;
  violationCount: number;
  warningCount: number;
}

export interface StrategyResult {
  workload: string;
  strategy: Strategy;
  steady: StageStats & { dropped: number; durationS: number };
  ramp: StageStats[];
  rampDropped: number;
  perOp: Record<'read' | 'edit' | 'rename', { goodput: number; gaveUp: number; acquireP95: number }>;
  saturation: Saturation;
  /** Errors over all operations of the run (threshold: 1%). */
  errorRate: number;
  errorCount: number;
  droppedTotal: number;
  thresholdsOk: boolean;
  failedThresholds: string[];
  k6ExitCode: number | null;
  safety: SafetySummary | null;
}

export interface Saturation {
  /** Highest ramp level (ops/s) that was kept up with; null when none was. */
  sustainedRate: number | null;
  /** First ramp level above sustainedRate (the lowest when none was kept up with); null when every level above kept up. */
  saturatedAt: number | null;
  /** Levels below sustainedRate that fell short anyway (a transient stall rather than the capacity limit). */
  shortBelow: number[];
  /** Highest goodput measured in any ramp level, ops/s. */
  peakGoodputRate: number;
  /** The ramp had levels at all. */
  measured: boolean;
}

const count = (summary: K6Summary, name: string): number => summary.metrics[name]?.values.count ?? 0;
const value = (summary: K6Summary, name: string, stat: string): number => summary.metrics[name]?.values[stat] ?? 0;

function latency(summary: K6Summary, name: string): Latency {
  return { p50: value(summary, name, 'med'), p95: value(summary, name, 'p(95)'), p99: value(summary, name, 'p(99)'), count: count(summary, name) };
}

function stage(summary: K6Summary, tag: string, offeredRate: number, seconds: number): StageStats {
  const goodput = count(summary, `goodput{stage:${tag}}`);
  return {
    stage: tag,
    offeredRate,
    offered: count(summary, `ops_offered{stage:${tag}}`),
    goodput,
    goodputRate: seconds > 0 ? goodput / seconds : 0,
    gaveUp: count(summary, `gave_up{stage:${tag}}`),
    conflicts: count(summary, `conflicts{stage:${tag}}`),
    retries: count(summary, `retries{stage:${tag}}`),
    errors: count(summary, `error_count{stage:${tag}}`),
    conflictRate: value(summary, `conflict_rate{stage:${tag}}`, 'rate'),
    acquire: latency(summary, `acquire_latency{stage:${tag}}`),
  };
}

export function keptUp(level: StageStats): boolean {
  return level.goodputRate >= KEEP_UP_RATIO * level.offeredRate;
}

export function saturationOf(levels: StageStats[]): Saturation {
  const sorted = [...levels].sort((a, b) => a.offeredRate - b.offeredRate);
  let highest = -1;
  sorted.forEach((level, index) => {
    if (keptUp(level)) highest = index;
  });
  const sustained = highest >= 0 ? sorted[highest]! : undefined;
  const above = sorted[highest + 1];
  return {
    sustainedRate: sustained?.offeredRate ?? null,
    saturatedAt: above?.offeredRate ?? null,
    shortBelow: sorted.slice(0, Math.max(0, highest)).filter((level) => !keptUp(level)).map((level) => level.offeredRate),
    peakGoodputRate: Math.max(0, ...levels.map((level) => level.goodputRate)),
    measured: levels.length > 0,
  };
}

export function extractResult(args: {
  summary: K6Summary;
  workload: string;
  strategy: Strategy;
  steady: { rate: number; durationS: number };
  ramp: { levels: number[]; stepS: number; transitionS: number };
  k6ExitCode: number | null;
  safety: SafetySummary | null;
}): StrategyResult {
  const { summary } = args;
  const steady = { ...stage(summary, 'steady', args.steady.rate, args.steady.durationS), dropped: count(summary, 'dropped_iterations{scenario:steady}'), durationS: args.steady.durationS };
  // Rates over the hold only: iterations started during a transition belong to no level.
  const ramp = args.ramp.levels.map((level) => stage(summary, `r${level}`, level, args.ramp.stepS - args.ramp.transitionS));
  const perOp = Object.fromEntries(
    (['read', 'edit', 'rename'] as const).map((op) => [
      op,
      {
        goodput: count(summary, `goodput{stage:steady,op:${op}}`),
        gaveUp: count(summary, `gave_up{stage:steady,op:${op}}`),
        acquireP95: value(summary, `acquire_latency{stage:steady,op:${op}}`, 'p(95)'),
      },
    ]),
  ) as StrategyResult['perOp'];
  const failedThresholds: string[] = [];
  for (const [name, metric] of Object.entries(summary.metrics)) {
    for (const [expression, result] of Object.entries(metric?.thresholds ?? {})) {
      if (!result.ok) failedThresholds.push(`${name}: ${expression}`);
    }
  }
  return {
    workload: args.workload,
    strategy: args.strategy,
    steady,
    ramp,
    rampDropped: count(summary, 'dropped_iterations{scenario:ramp}'),
    perOp,
    saturation: saturationOf(ramp),
    errorRate: value(summary, 'errors', 'rate'),
    errorCount: count(summary, 'error_count'),
    droppedTotal: count(summary, 'dropped_iterations'),
    thresholdsOk: failedThresholds.length === 0,
    failedThresholds,
    k6ExitCode: args.k6ExitCode,
    safety: args.safety,
  };
}

function round(value: number, digits = 1): string {
  if (!Number.isFinite(value)) return '-';
  return value.toFixed(digits);
}

/** "3.1x" (a relative to b); "more than" when b is 0. */
function ratio(a: number, b: number): string {
  if (b <= 0) return a > 0 ? 'more than' : '1.0x';
  const r = a / b;
  return r >= 10 ? `${Math.round(r)}x` : `${r.toFixed(1)}x`;
}

export function describeSaturation(s: Saturation, maxLevel: number | undefined): string {
  if (!s.measured) return 'not measured (no ramp)';
  const stalls = s.shortBelow.length ? `; fell short at ${s.shortBelow.join(', ')} ops/s too (transient stall)` : '';
  if (s.saturatedAt === null) return `kept up through ${maxLevel} ops/s (highest level tried)${stalls}`;
  if (s.sustainedRate === null) return `below ${s.saturatedAt} ops/s (first level already short; peak ${round(s.peakGoodputRate)} ops/s)`;
  return `between ${s.sustainedRate} and ${s.saturatedAt} ops/s (peak goodput ${round(s.peakGoodputRate)} ops/s)${stalls}`;
}

export function saturationCell(s: Saturation, maxLevel: number | undefined): string {
  if (!s.measured) return '-';
  const mark = s.shortBelow.length ? ' *' : '';
  if (s.saturatedAt === null) return `> ${maxLevel} (not reached)${mark}`;
  if (s.sustainedRate === null) return `< ${s.saturatedAt}`;
  return `${s.sustainedRate}-${s.saturatedAt}${mark}`;
}

export function describeWorkload(workload: WorkloadConfig): string {
  const mix = mixPercentages(workload.mix);
  return (
    `read/edit/rename ${mix.read}/${mix.edit}/${mix.rename}%, ${workload.criticalSectionMs} ms critical sections, ` +
    `${describeSkew(workload.skew)}, tree depth ${workload.tree.depth} x fan-out ${workload.tree.fanout} x ${workload.tree.filesPerDir} files per directory`
  );
}

export interface Recommendation {
  workload: string;
  winner: Strategy | null;
  headline: string;
  reasons: string[];
}

/** Picks a strategy for one workload from measured numbers only, and says why. */
export function recommend(workload: WorkloadConfig, results: StrategyResult[]): Recommendation {
  const unsafe = results.filter((r) => r.safety && !r.safety.ok);
  const broken = results.filter((r) => r.errorRate >= 0.01);
  const eligible = results.filter((r) => !unsafe.includes(r) && !broken.includes(r) && r.steady.offered > 0);
  const reasons: string[] = [];
  for (const r of unsafe) reasons.push(`${r.strategy} is excluded: the safety checker found ${r.safety!.violationCount} violation(s).`);
  for (const r of broken) if (!unsafe.includes(r)) reasons.push(`${r.strategy} is excluded: ${round(r.errorRate * 100, 2)}% of its operations failed with errors.`);
  if (eligible.length === 0) {
    return { workload: workload.name, winner: null, headline: 'no recommendation: no strategy ran cleanly', reasons };
  }
  const maxLevel = (r: StrategyResult): number | undefined => r.ramp[r.ramp.length - 1]?.offeredRate;
  const ranked = [...eligible].sort(
    (a, b) =>
      b.steady.goodputRate - a.steady.goodputRate ||
      b.saturation.peakGoodputRate - a.saturation.peakGoodputRate ||
      a.steady.acquire.p95 - b.steady.acquire.p95,
  );
  const close = (a: number, b: number): boolean => Math.abs(a - b) <= TIE_RATIO * Math.max(a, b);
  const best = ranked[0]!;
  const offered = best.steady.offeredRate;
  // Ties on steady goodput are broken by ramp peak goodput, then by acquire latency.
  const tiedOnGoodput = ranked.filter((r) => close(r.steady.goodputRate, best.steady.goodputRate));
  const lowestP95 = (candidates: StrategyResult[]): StrategyResult => [...candidates].sort((a, b) => a.steady.acquire.p95 - b.steady.acquire.p95)[0]!;
  let winner = best;
  let basis: 'goodput' | 'peak' | 'latency' = 'goodput';
  let latencyField: StrategyResult[] = [];
  if (tiedOnGoodput.length > 1) {
    if (tiedOnGoodput.every((r) => r.saturation.measured)) {
      const byPeak = [...tiedOnGoodput].sort((a, b) => b.saturation.peakGoodputRate - a.saturation.peakGoodputRate);
      const tiedOnPeak = byPeak.filter((r) => close(r.saturation.peakGoodputRate, byPeak[0]!.saturation.peakGoodputRate));
      if (tiedOnPeak.length === 1) {
        winner = byPeak[0]!;
        basis = 'peak';
      } else {
        latencyField = tiedOnPeak;
        basis = 'latency';
      }
    } else {
      latencyField = tiedOnGoodput;
      basis = 'latency';
    }
  }
  if (basis === 'latency') {
    winner = lowestP95(latencyField);
    const second = lowestP95(latencyField.filter((r) => r !== winner));
    // Latencies a couple of ms apart at a light load say nothing: call it a tie.
    if (second.steady.acquire.p95 - winner.steady.acquire.p95 <= Math.max(2, TIE_RATIO * 2 * second.steady.acquire.p95)) {
      const behind = ranked.filter((r) => !latencyField.includes(r));
      const lines = eligible.map((r) => reasonLine(r, offered, maxLevel(r)));
      return {
        workload: workload.name,
        winner: null,
        headline:
          `no clear winner at ${offered} ops/s offered: ${latencyField.map((r) => r.strategy).join(', ')} are within a few percent on goodput` +
          `${latencyField.every((r) => r.saturation.measured) ? ', ramp peak' : ''} and acquire p95` +
          (behind.length ? ` (${behind.map((r) => r.strategy).join(', ')} behind)` : '') +
          '; more load or more contention would separate them',
        reasons: [...reasons, ...lines],
      };
    }
  }
  const others = eligible.filter((r) => r !== winner);
  let headline: string;
  if (basis === 'goodput') {
    const runnerUp = ranked.find((r) => r !== winner);
    const worst = ranked[ranked.length - 1]!;
    headline = runnerUp
      ? `${winner.strategy}: ${ratio(winner.steady.goodputRate, worst.steady.goodputRate)} the goodput of ${worst.strategy}` +
        (runnerUp !== worst ? ` and ${ratio(winner.steady.goodputRate, runnerUp.steady.goodputRate)} that of ${runnerUp.strategy}` : '') +
        ` at ${offered} ops/s offered`
      : `${winner.strategy}: ${results.length === 1 ? 'the only strategy measured' : 'the only strategy that ran cleanly'}`;
  } else {
    const tiedWith = tiedOnGoodput.filter((r) => r !== winner).map((r) => r.strategy).join(' and ');
    const behind = ranked.filter((r) => !tiedOnGoodput.includes(r));
    const worst = behind[behind.length - 1];
    const tie =
      `${winner.strategy}: ties ${tiedWith} on goodput at ${offered} ops/s offered` +
      (worst ? ` (${ratio(winner.steady.goodputRate, worst.steady.goodputRate)} ${worst.strategy}'s)` : '');
    if (basis === 'peak') {
      const next = tiedOnGoodput.filter((r) => r !== winner).sort((a, b) => b.saturation.peakGoodputRate - a.saturation.peakGoodputRate)[0]!;
      headline = `${tie}, and reaches ${ratio(winner.saturation.peakGoodputRate, next.saturation.peakGoodputRate)} ${next.strategy}'s peak goodput under the ramp (${round(winner.saturation.peakGoodputRate)} vs ${round(next.saturation.peakGoodputRate)} ops/s)`;
    } else {
      const next = tiedOnGoodput.filter((r) => r !== winner).sort((a, b) => a.steady.acquire.p95 - b.steady.acquire.p95)[0]!;
      headline = `${tie}, with the lowest acquire p95 (${round(winner.steady.acquire.p95)} ms vs ${round(next.steady.acquire.p95)} ms for ${next.strategy})`;
    }
  }
  for (const r of [winner, ...others]) reasons.push(reasonLine(r, offered, maxLevel(r)));
  return { workload: workload.name, winner: winner.strategy, headline, reasons };
}

function reasonLine(r: StrategyResult, offered: number, maxLevel: number | undefined): string {
  return (
    `${r.strategy}: ${round(r.steady.goodputRate)} ops/s goodput of ${offered} offered, acquire p50/p95/p99 ` +
    `${round(r.steady.acquire.p50)}/${round(r.steady.acquire.p95)}/${round(r.steady.acquire.p99)} ms, ` +
    `${round(r.steady.conflictRate * 100)}% of acquire requests conflicted, ${r.steady.gaveUp} gave up; ` +
    `saturation ${describeSaturation(r.saturation, maxLevel)}.`
  );
}

/** When several workloads were measured and their winners differ, say which won where (measured facts only). */
export function crossWorkloadNote(workloads: WorkloadConfig[], recommendations: Recommendation[]): string | undefined {
  const winners = new Set(recommendations.map((r) => r.winner).filter(Boolean));
  if (recommendations.length < 2 || winners.size < 2) return undefined;
  const parts = recommendations.map((rec) => {
    const workload = workloads.find((w) => w.name === rec.workload)!;
    const mix = mixPercentages(workload.mix);
    return `${rec.winner ?? 'none'} won "${rec.workload}" (renames ${mix.rename}%, edits ${mix.edit}%, ${workload.criticalSectionMs} ms critical sections)`;
  });
  return `The winner depends on the workload: ${parts.join('; ')}.`;
}

export interface RunInfo {
  runId: string;
  startedAt: string;
  finishedAt: string;
  baseUrl: string;
  mode: 'local' | 'target';
  k6: string;
  config: LoadtestConfig;
  seeded?: { index: string; documents: number };
  /** Extra notes (e.g. an interrupted run). */
  notes: string[];
}

export interface ReportInput {
  info: RunInfo;
  results: StrategyResult[];
}

function tableRows(results: StrategyResult[]): string[][] {
  return results.map((r) => {
    const maxLevel = r.ramp[r.ramp.length - 1]?.offeredRate;
    return [
      r.strategy,
      `${round(r.steady.goodputRate)} / ${r.steady.offeredRate}`,
      `${round(r.steady.acquire.p50)} / ${round(r.steady.acquire.p95)} / ${round(r.steady.acquire.p99)}`,
      `${round(r.steady.conflictRate * 100)}%`,
      String(r.steady.retries),
      String(r.steady.gaveUp),
      `${r.steady.dropped} / ${r.droppedTotal}`,
      `${r.errorCount} (${round(r.errorRate * 100, 2)}%)`,
      saturationCell(r.saturation, maxLevel),
      r.safety ? (r.safety.ok ? `ok (${r.safety.holds})` : `VIOLATED (${r.safety.violationCount})`) : 'not checked',
    ];
  });
}

const TABLE_HEADER = [
  'strategy',
  'goodput ops/s (of offered)',
  'acquire p50/p95/p99 ms',
  'conflict rate',
  'retries',
  'gave up',
  'dropped (steady/all)',
  'errors (rate)',
  'saturation ops/s',
  'safety (holds)',
];

export function markdownTable(results: StrategyResult[]): string {
  const rows = tableRows(results);
  return [
    `| ${TABLE_HEADER.join(' | ')} |`,
    `| ${TABLE_HEADER.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

/** Fixed-width table for the terminal. */
export function textTable(results: StrategyResult[]): string {
  const rows = [TABLE_HEADER, ...tableRows(results)];
  const widths = TABLE_HEADER.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

function rampTable(results: StrategyResult[]): string {
  const levels = results[0]?.ramp.map((s) => s.offeredRate) ?? [];
  if (levels.length === 0) return '';
  const header = ['offered ops/s', ...results.map((r) => `${r.strategy} goodput`), ...results.map((r) => `${r.strategy} acquire p95 ms`)];
  const rows = levels.map((level, i) => [
    String(level),
    ...results.map((r) => round(r.ramp[i]?.goodputRate ?? NaN)),
    ...results.map((r) => round(r.ramp[i]?.acquire.p95 ?? NaN)),
  ]);
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

export function goodputChart(workload: WorkloadConfig, results: StrategyResult[]): string {
  const series = results.map((r) => ({
    name: r.strategy,
    points: r.ramp.length > 0 ? r.ramp.map((s) => ({ x: s.offeredRate, y: s.goodputRate })) : [{ x: r.steady.offeredRate, y: r.steady.goodputRate }],
  }));
  const offered = [...new Set(results.flatMap((r) => (r.ramp.length > 0 ? r.ramp.map((s) => s.offeredRate) : [r.steady.offeredRate])))];
  const maxOffered = Math.max(0, ...offered);
  return lineChart({
    title: `Goodput against offered load - ${workload.name}`,
    xLabel: 'offered load (operations/s)',
    yLabel: 'goodput (completed operations/s)',
    series: [...series, { name: 'offered (ideal)', points: [{ x: 0, y: 0 }, { x: maxOffered, y: maxOffered }], color: '#999999', dashed: true }],
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

export function latencyByLoadChart(workload: WorkloadConfig, results: StrategyResult[]): string | undefined {
  if (!results.some((r) => r.ramp.length > 0)) return undefined;
  return lineChart({
    title: `Acquire latency p95 against offered load - ${workload.name}`,
    xLabel: 'offered load (operations/s)',
    yLabel: 'acquire p95 (ms)',
    series: results.map((r) => ({ name: r.strategy, points: r.ramp.filter((s) => s.acquire.count > 0).map((s) => ({ x: s.offeredRate, y: s.acquire.p95 })) })),
  });
}

function workloadsOf(input: ReportInput): Array<{ workload: WorkloadConfig; results: StrategyResult[] }> {
  return input.info.config.workloads
    .map((workload) => ({ workload, results: input.results.filter((r) => r.workload === workload.name) }))
    .filter((entry) => entry.results.length > 0);
}

export function recommendations(input: ReportInput): { perWorkload: Recommendation[]; note: string | undefined } {
  const perWorkload = workloadsOf(input).map(({ workload, results }) => recommend(workload, results));
  return { perWorkload, note: crossWorkloadNote(input.info.config.workloads, perWorkload) };
}

function settingsLines(info: RunInfo): string[] {
  const { schedule, retry } = info.config;
  return [
    `- run ${info.runId}, ${info.startedAt} to ${info.finishedAt}, ${info.mode === 'target' ? `against ${info.baseUrl}` : `local stack at ${info.baseUrl}`}, ${info.k6}`,
    `- steady: constant-arrival-rate ${schedule.steady.rate} ops/s for ${schedule.steady.durationS} s; ` +
      (schedule.ramp.levels.length > 0 ? `ramp: ramping-arrival-rate through ${schedule.ramp.levels.join(', ')} ops/s, ${schedule.ramp.stepS} s per level` : 'no ramp'),
    `- client: retries 409/503 with exponential backoff ${retry.baseDelayMs}-${retry.maxDelayMs} ms and jitter` +
      `${retry.honourRetryAfter ? ', waiting at least retryAfterMs (capped at the backoff maximum)' : ''}; gives up after ${retry.budgetMs} ms; lease TTL ${info.config.ttlMs} ms`,
    `- goodput = operations that acquired, ran their critical section and released; saturation = between the highest ramp level where goodput stayed >= ${KEEP_UP_RATIO * 100}% of offered and the next level (* = a lower level fell short too, a transient stall)`,
    ...(info.seeded ? [`- tree seeded into Elasticsearch index \`${info.seeded.index}\` (${info.seeded.documents} documents)`] : []),
    ...info.notes.map((note) => `- note: ${note}`),
  ];
}

export function renderMarkdown(input: ReportInput, charts: { goodput: string }): string {
  const { perWorkload, note } = recommendations(input);
  const lines: string[] = ['# Lock strategy load test', '', ...settingsLines(input.info), ''];
  lines.push('## Recommendation', '');
  for (const rec of perWorkload) {
    lines.push(`**${perWorkload.length > 1 ? `${rec.workload}: ` : ''}${rec.headline}.**`, '');
    for (const reason of rec.reasons) lines.push(`- ${reason}`);
    lines.push('');
  }
  if (note) lines.push(note, '');
  lines.push(`![goodput against offered load](${charts.goodput})`, '');
  for (const { workload, results } of workloadsOf(input)) {
    lines.push(`## Workload "${workload.name}"`, '', describeWorkload(workload), '');
    lines.push(markdownTable(results), '');
    const ramp = rampTable(results);
    if (ramp) lines.push('Ramp (goodput in ops/s per offered level):', '', ramp, '');
    lines.push('Per operation (steady phase): goodput / gave up / acquire p95 ms', '');
    lines.push('| strategy | read | edit | rename |', '| --- | --- | --- | --- |');
    for (const r of results) {
      const cell = (op: 'read' | 'edit' | 'rename'): string => `${r.perOp[op].goodput} / ${r.perOp[op].gaveUp} / ${round(r.perOp[op].acquireP95)}`;
      lines.push(`| ${r.strategy} | ${cell('read')} | ${cell('edit')} | ${cell('rename')} |`);
    }
    lines.push('');
    const failed = results.filter((r) => !r.thresholdsOk || (r.k6ExitCode !== 0 && r.k6ExitCode !== null));
    for (const r of failed) {
      lines.push(`- ${r.strategy}: k6 exit ${r.k6ExitCode}${r.failedThresholds.length ? `, failed thresholds: ${r.failedThresholds.join('; ')}` : ''}`);
    }
    if (failed.length) lines.push('');
  }
  lines.push('Files: `summary-<workload>-<strategy>.json` (k6 summaries), `safety-<workload>-<strategy>.json`, `holds-<workload>-<strategy>.log`, `report.html`.', '');
  return lines.join('\n');
}

function htmlTable(results: StrategyResult[]): string {
  const rows = tableRows(results);
  return `<table><thead><tr>${TABLE_HEADER.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((row) => `<tr>${row.map((cell) => `<td>${escapeXml(cell)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

export function renderHtml(input: ReportInput): string {
  const { perWorkload, note } = recommendations(input);
  const body: string[] = [];
  body.push('<h1>Lock strategy load test</h1>');
  body.push(`<ul>${settingsLines(input.info).map((line) => `<li>${escapeXml(line.replace(/^- /, '').replace(/`/g, ''))}</li>`).join('')}</ul>`);
  body.push('<h2>Recommendation</h2>');
  for (const rec of perWorkload) {
    body.push(`<p class="headline">${escapeXml(`${perWorkload.length > 1 ? `${rec.workload}: ` : ''}${rec.headline}.`)}</p>`);
    body.push(`<ul>${rec.reasons.map((reason) => `<li>${escapeXml(reason)}</li>`).join('')}</ul>`);
  }
  if (note) body.push(`<p>${escapeXml(note)}</p>`);
  for (const { workload, results } of workloadsOf(input)) {
    body.push(`<h2>Workload "${escapeXml(workload.name)}"</h2>`);
    body.push(`<p>${escapeXml(describeWorkload(workload))}</p>`);
    body.push(htmlTable(results));
    body.push(`<div class="chart">${goodputChart(workload, results)}</div>`);
    body.push(`<div class="chart">${latencyBars(workload, results)}</div>`);
    const byLoad = latencyByLoadChart(workload, results);
    if (byLoad) body.push(`<div class="chart">${byLoad}</div>`);
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lock strategy load test ${escapeXml(input.info.runId)}</title>
<style>
body { font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 14px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f6f6f6; }
.headline { font-weight: 600; font-size: 1.1rem; }
.chart { margin: 1rem 0; }
</style></head>
<body>
${body.join('\n')}
</body></html>
`;
}

/** The lines printed at the end of a run: the table(s) and the recommendation. */
export function consoleReport(input: ReportInput): string {
  const { perWorkload, note } = recommendations(input);
  const lines: string[] = [];
  for (const { workload, results } of workloadsOf(input)) {
    lines.push(`workload ${workload.name}: ${describeWorkload(workload)}`, textTable(results), '');
  }
  for (const rec of perWorkload) {
    lines.push(`recommendation${perWorkload.length > 1 ? ` (${rec.workload})` : ''}: ${rec.headline}.`);
    for (const reason of rec.reasons) lines.push(`  - ${reason}`);
  }
  if (note) lines.push(note);
  return lines.join('\n');
}
