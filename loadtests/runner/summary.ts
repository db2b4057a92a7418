/**
 * The numbers of one granularity run, read from the k6 summary (handleSummary's JSON, or k6's own
 * --summary-export) and the safety check: per-stage goodput, latency and conflicts, and where it saturates.
 */
import { readFileSync } from 'node:fs';
import { OBJECTIVE_METRICS } from '../shared/objective.js';
import { type Granularity, OP_KINDS, type OpKind } from '../shared/workload.js';
import type { CapacityResult } from './capacity.js';
import type { Calibration } from './model.js';

/** A level "keeps up" while goodput stays at or above this share of the offered load. */
export const KEEP_UP_RATIO = 0.9;

interface SummaryMetric {
  type?: string;
  values: Record<string, number>;
  thresholds?: Record<string, { ok: boolean }>;
}

export interface K6Summary {
  metrics: Record<string, SummaryMetric | undefined>;
}

/**
 * A k6 summary file in the shape handleSummary receives. Reads both what locks.ts's handleSummary
 * writes (metrics with `values` and `thresholds: { expression: { ok } }`) and k6's --summary-export
 * (values flattened into the metric, a rate's `rate` called `value`, `thresholds: { expression: failed }`).
 */
export function readK6Summary(path: string): K6Summary {
  return normalizeK6Summary(JSON.parse(readFileSync(path, 'utf8')) as unknown);
}

export function normalizeK6Summary(raw: unknown): K6Summary {
  const rawMetrics = (raw as { metrics?: Record<string, unknown> } | null)?.metrics ?? {};
  const metrics: K6Summary['metrics'] = {};
  for (const [name, metric] of Object.entries(rawMetrics)) {
    if (!metric || typeof metric !== 'object') continue;
    const m = metric as Record<string, unknown>;
    if (m.values && typeof m.values === 'object') {
      metrics[name] = m as unknown as SummaryMetric;
      continue;
    }
    const values: Record<string, number> = {};
    for (const [key, v] of Object.entries(m)) if (typeof v === 'number') values[key] = v;
    // A rate (it has passes and fails) exports its rate as `value`; a gauge's `value` stays.
    if ('passes' in values && 'value' in values && !('rate' in values)) values.rate = values.value as number;
    const thresholds: Record<string, { ok: boolean }> = {};
    for (const [expression, failed] of Object.entries((m.thresholds as Record<string, unknown> | undefined) ?? {})) {
      thresholds[expression] = { ok: failed !== true };
    }
    metrics[name] = { values, ...(Object.keys(thresholds).length > 0 ? { thresholds } : {}) };
  }
  return { metrics };
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
  /** Operations under a directory another holder was renaming at the time (see checker.ts). */
  phantomCount?: number;
}

export interface GranularityResult {
  workload: string;
  granularity: Granularity;
  /** 1-based trial number (trials of all granularities are interleaved). */
  trial: number;
  /** The steady phase: the expected rate (--rate). */
  steady: StageStats & { dropped: number; durationS: number };
  /** The capacity search (null when it was not run). */
  capacity: CapacityResult | null;
  /** The same capacity search on the engine alone (no HTTP, no serverless-offline); absent when not measured. */
  engine?: EngineResult;
  /** Goodput and latency per offered rate: the capacity probes, by rate (or a ramp's levels). */
  ramp: StageStats[];
  rampDropped: number;
  perOp: Record<OpKind, { goodput: number; gaveUp: number; acquireP95: number }>;
  saturation: Saturation;
  /** Errors over all operations of the run (threshold: 1%). */
  errorRate: number;
  errorCount: number;
  droppedTotal: number;
  /** No threshold failed but the objective's (k6 exits 99 for those too). */
  thresholdsOk: boolean;
  /** Thresholds that fail a run (errors, failed requests, checks), as `metric: expression`. */
  failedThresholds: string[];
  /** The objective's thresholds that failed (shared/objective.ts): the rate was beyond what the granularity sustains. */
  missedObjective: string[];
  k6ExitCode: number | null;
  safety: SafetySummary | null;
  /** k6's web dashboard export for this run, a file name in the results folder (absent: none was written). */
  k6Dashboard?: string;
}

export interface EngineResult {
  capacity: CapacityResult;
  /** Elasticsearch requests per completed operation at the highest sustained rate. */
  requestsPerOp: number;
  /** A light probe's figures (at most half the capacity), the deployment model's calibration (model.ts). */
  calibration?: Calibration;
  /** The offered rate of that probe, ops/s. */
  calibratedAt?: number;
  safetyOk: boolean;
  violationCount: number;
  phantomCount: number;
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
    shortBelow: sorted
      .slice(0, Math.max(0, highest))
      .filter((level) => !keptUp(level))
      .map((level) => level.offeredRate),
    peakGoodputRate: Math.max(0, ...levels.map((level) => level.goodputRate)),
    measured: levels.length > 0,
  };
}

export function extractResult(args: {
  summary: K6Summary;
  workload: string;
  granularity: Granularity;
  trial?: number;
  steady: { rate: number; durationS: number };
  ramp: { levels: number[]; stepS: number; transitionS: number };
  k6ExitCode: number | null;
  safety: SafetySummary | null;
}): GranularityResult {
  const { summary } = args;
  const steady = {
    ...stage(summary, 'steady', args.steady.rate, args.steady.durationS),
    dropped: count(summary, 'dropped_iterations{scenario:steady}'),
    durationS: args.steady.durationS,
  };
  // Rates over the hold only: iterations started during a transition belong to no level.
  const ramp = args.ramp.levels.map((level) => stage(summary, `r${level}`, level, args.ramp.stepS - args.ramp.transitionS));
  const perOp = Object.fromEntries(
    OP_KINDS.map((op) => [
      op,
      {
        goodput: count(summary, `goodput{stage:steady,op:${op}}`),
        gaveUp: count(summary, `gave_up{stage:steady,op:${op}}`),
        acquireP95: value(summary, `acquire_latency{stage:steady,op:${op}}`, 'p(95)'),
      },
    ]),
  ) as GranularityResult['perOp'];
  const failedThresholds: string[] = [];
  const missedObjective: string[] = [];
  for (const [name, metric] of Object.entries(summary.metrics)) {
    for (const [expression, result] of Object.entries(metric?.thresholds ?? {})) {
      if (!result.ok) (OBJECTIVE_METRICS.includes(name) ? missedObjective : failedThresholds).push(`${name}: ${expression}`);
    }
  }
  return {
    workload: args.workload,
    granularity: args.granularity,
    trial: args.trial ?? 1,
    steady,
    capacity: null,
    ramp,
    rampDropped: count(summary, 'dropped_iterations{scenario:ramp}'),
    perOp,
    saturation: saturationOf(ramp),
    errorRate: value(summary, 'errors', 'rate'),
    errorCount: count(summary, 'error_count'),
    droppedTotal: count(summary, 'dropped_iterations'),
    thresholdsOk: failedThresholds.length === 0,
    failedThresholds,
    missedObjective,
    k6ExitCode: args.k6ExitCode,
    safety: args.safety,
  };
}
