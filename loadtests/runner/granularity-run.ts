/**
 * One granularity on one workload: warm the functions, run k6, check its critical sections for
 * safety, and read its numbers. Says what went wrong instead of throwing, so the loop can go on.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { runConfig, type Schedule } from '../shared/defaults.js';
import { judge, type ProbeVerdict } from '../shared/objective.js';
import { summaryLine } from '../shared/summary-line.js';
import { type Granularity, type K6RunConfig, namespaceFor, type WorkloadConfig } from '../shared/workload.js';
import { checkHolds, formatSafety, parseHoldLog, type SafetyReport } from './checker.js';
import { granularitySeconds, type LoadtestConfig, warmupConcurrency } from './config.js';
import type { EngineLayer } from './engine/layer.js';
import type { Interrupt } from './interrupt.js';
import { describeK6Exit, K6_ABORTED, K6_THRESHOLDS_FAILED, runK6 } from './k6-process.js';
import { log } from './log.js';
import { extractResult, type GranularityResult, readK6Summary, type StageStats } from './summary.js';
import { DEFAULT_WARMUP, warmUp, warmupNamespace } from './warmup.js';

export interface RunContext {
  config: LoadtestConfig;
  k6: string;
  runId: string;
  baseUrl: string;
  /** What is tested, when baseUrl is the signing proxy in front of it. */
  targetUrl?: string;
  outDir: string;
  interrupt: Interrupt;
  /** The lock layer alone, on the same lock store (absent: not measured). */
  engine?: EngineLayer;
}

export interface GranularityOutcome {
  result?: GranularityResult;
  notes: string[];
  /** Problems that fail the whole run (k6 errors, safety violations). */
  failures: number;
  /** No further run can succeed (the service failed k6's health check), or the user interrupted. */
  stop: boolean;
  /** What the run's one progress line says, in parts (figures, safety, dashboard, findings); run.ts joins them. */
  figures: string[];
}

/** What every k6 run of the context shares: the binary, the service it loads, Ctrl-C, and how much it prints. */
function k6Of(ctx: RunContext): Pick<Parameters<typeof runK6>[0], 'k6' | 'baseUrl' | 'targetUrl' | 'interrupt' | 'verbose'> {
  return {
    k6: ctx.k6,
    baseUrl: ctx.baseUrl,
    ...(ctx.targetUrl ? { targetUrl: ctx.targetUrl } : {}),
    interrupt: ctx.interrupt,
    verbose: ctx.config.verbose ?? false,
  };
}

/** What k6 is told to run: `granularity` on `workload` in `namespace`, on `schedule`, with the run's retries, TTL and objective. */
function k6ConfigOf(ctx: RunContext, workload: WorkloadConfig, granularity: Granularity, namespace: string, schedule: Schedule): K6RunConfig {
  const { config } = ctx;
  return runConfig({
    runId: ctx.runId,
    granularity,
    namespace,
    workload,
    schedule,
    retry: config.retry,
    ttlMs: config.ttlMs,
    objective: config.capacity.objective,
  });
}

/** Warms the functions; returns what the run's progress line says about it (nothing when disabled). */
export async function warmFunctions(ctx: RunContext): Promise<string | undefined> {
  const concurrency = warmupConcurrency(ctx.config);
  if (concurrency === 0) return undefined;
  const warm = await warmUp(ctx.baseUrl, warmupNamespace(ctx.runId), { ...DEFAULT_WARMUP, concurrency });
  return (
    `warm-up ${warm.rounds} round(s) of up to ${concurrency}, last ${warm.lastRoundMs} ms` +
    (warm.warm ? '' : ' (still slow; early numbers may include cold starts)') +
    (warm.failures ? `, ${warm.failures} failed: ${warm.sample}` : '')
  );
}

export async function runGranularity(ctx: RunContext, workload: WorkloadConfig, granularity: Granularity, trial = 1): Promise<GranularityOutcome> {
  const { config } = ctx;
  const stem = `${workload.name}-${granularity}${config.trials > 1 ? `-t${trial}` : ''}`;
  const k6Config = k6ConfigOf(ctx, workload, granularity, namespaceFor(granularity, ctx.runId, workload.name), config.schedule);
  if (workload.traceFile) k6Config.replay = true;
  const run = await runK6({ ...k6Of(ctx), k6Config, stem, outDir: ctx.outDir, scheduledS: granularitySeconds(config.schedule), dashboard: true });
  const outcome: GranularityOutcome = { notes: [], failures: 0, stop: false, figures: [] };
  /** k6 failed, unless it exited 99 (thresholds) for the objective's thresholds alone: a finding, not a failure. */
  const k6Failed = (objectiveOnly: boolean): void => {
    if (run.exitCode === 0 || (objectiveOnly && run.exitCode === K6_THRESHOLDS_FAILED)) return;
    outcome.failures++;
    // A crash or a setup failure was reported with the end of its log (k6-process.ts).
    if (run.exitCode === K6_THRESHOLDS_FAILED || ctx.interrupt.interrupted) outcome.figures.push(describeK6Exit(run.exitCode));
  };
  const safety = checkSafety(ctx.outDir, stem, `${granularity}/${workload.name}`, run.holdsPath);
  if (!safety.ok) outcome.failures++;
  const safetyFigure = `safety ${granularity}/${workload.name}: ${safety.ok ? `OK, ${safety.holds} critical sections` : `VIOLATED (${safety.violationCount})`}${
    safety.phantomCount > 0 ? `, ${safety.phantomCount} semantic conflict(s)` : ''
  }`;
  if (!existsSync(run.summaryPath)) {
    outcome.figures.push(`[${granularity}] k6 wrote no summary (exit ${run.exitCode})`, safetyFigure);
    k6Failed(false);
    outcome.notes.push(`${granularity} on ${workload.name}: k6 wrote no summary (exit ${run.exitCode})`);
    if (run.exitCode === K6_ABORTED) {
      outcome.notes.push('the service failed its health check; remaining runs skipped');
      outcome.stop = true;
    }
    return outcome;
  }
  if (ctx.interrupt.interrupted) {
    k6Failed(false);
    outcome.notes.push(
      `${granularity} on ${workload.name} was interrupted; its partial numbers are left out of the report (see ${relative(ctx.outDir, run.summaryPath)})`,
    );
    outcome.stop = true;
    return outcome;
  }
  const summary = readK6Summary(run.summaryPath);
  // Ours (k6's own end-of-test summary is in its log, and on the terminal with --verbose).
  outcome.figures.push(summaryLine(granularity, k6Config.steady, summary), safetyFigure);
  outcome.result = extractResult({
    summary,
    workload: workload.name,
    granularity,
    trial,
    steady: config.schedule.steady,
    ramp: config.schedule.ramp,
    k6ExitCode: run.exitCode,
    safety: { ok: safety.ok, holds: safety.holds, violationCount: safety.violationCount, warningCount: safety.warningCount, phantomCount: safety.phantomCount },
  });
  if (run.dashboardPath) {
    outcome.result.k6Dashboard = basename(run.dashboardPath);
    outcome.figures.push(`dashboard ${outcome.result.k6Dashboard}`);
  }
  k6Failed(outcome.result.thresholdsOk);
  if (!outcome.result.thresholdsOk) outcome.figures.push(`thresholds failed: ${outcome.result.failedThresholds.join(', ')}`);
  if (outcome.result.missedObjective.length > 0) {
    outcome.figures.push(
      `missed the objective at the expected rate (k6 thresholds ${outcome.result.missedObjective.join(', ')}): the rate is beyond what ${granularity} sustains`,
    );
  }
  return outcome;
}

export interface ProbeRun {
  verdict: ProbeVerdict;
  /** The probe as a stage (for the goodput and latency charts). */
  stage: StageStats;
  /** The safety checker found violations in the probe's critical sections. */
  unsafe: boolean;
  /** Operations under a directory being renamed at the time (semantic conflicts the locks did not cover). */
  phantoms: number;
  notes: string[];
}

/**
 * One capacity probe: the rate offered for config.capacity.probeS seconds by a quiet k6 run, its
 * critical sections checked for safety like any run. k6 failing its thresholds is what an
 * overloaded probe does, not a failure of the run.
 */
export async function runProbe(ctx: RunContext, workload: WorkloadConfig, granularity: Granularity, trial: number, rate: number): Promise<ProbeRun> {
  const { config } = ctx;
  const schedule = { ...config.schedule, steady: { rate, durationS: config.capacity.probeS }, ramp: { ...config.schedule.ramp, levels: [] }, gracefulStopS: 2 };
  // Probes are many: their summaries, hold logs and safety files go to probes/.
  const probeDir = join(ctx.outDir, 'probes');
  mkdirSync(probeDir, { recursive: true });
  // A rate probed again (a marginal miss being confirmed) keeps the first probe's files.
  const trialPart = config.trials > 1 ? `-t${trial}` : '';
  const repeatPart = (again: number) => (again > 1 ? `-${again}` : '');
  const stemOf = (again: number) => `${workload.name}-${granularity}${trialPart}-probe${rate}${repeatPart(again)}`;
  let again = 1;
  while (existsSync(join(probeDir, `summary-${stemOf(again)}.json`))) again++;
  const stem = stemOf(again);
  // A namespace per probe: an overloaded run ends with holders cut off mid-operation, whose leases
  // (the TTL) would outlive the next probes in a shared namespace. Global once measured 0 goodput
  // at 20 and 10 ops/s right after a probe at 40, and its capacity came out 4 ops/s.
  const namespace = namespaceFor(granularity, `${ctx.runId}-t${trial}-p${rate}${repeatPart(again)}`, workload.name);
  const k6Config = k6ConfigOf(ctx, workload, granularity, namespace, schedule);
  const run = await runK6({ ...k6Of(ctx), k6Config, stem, outDir: probeDir, scheduledS: granularitySeconds(schedule), quiet: true });
  const notes: string[] = [];
  const safety = checkSafety(probeDir, stem, `${granularity}/${workload.name} probe ${rate} ops/s`, run.holdsPath, true);
  const failedRun = (): ProbeRun => {
    const stage = emptyStage(rate);
    return {
      verdict: judge({ rate, goodputRate: 0, acquireP99: Number.POSITIVE_INFINITY, errorRate: 1, dropped: 0 }, config.capacity.objective),
      stage,
      unsafe: !safety.ok,
      phantoms: safety.phantomCount,
      notes,
    };
  };
  if (run.exitCode !== 0 && run.exitCode !== K6_THRESHOLDS_FAILED) notes.push(`${granularity} probe at ${rate} ops/s: ${describeK6Exit(run.exitCode)}`);
  if (!existsSync(run.summaryPath)) return failedRun();
  const summary = readK6Summary(run.summaryPath);
  const result = extractResult({
    summary,
    workload: workload.name,
    granularity,
    trial,
    steady: schedule.steady,
    ramp: schedule.ramp,
    k6ExitCode: run.exitCode,
    safety: null,
  });
  const stage: StageStats = { ...result.steady, stage: `probe${rate}` };
  const verdict = judge(
    { rate, goodputRate: result.steady.goodputRate, acquireP99: result.steady.acquire.p99, errorRate: result.errorRate, dropped: result.steady.dropped },
    config.capacity.objective,
  );
  return { verdict, stage, unsafe: !safety.ok, phantoms: safety.phantomCount, notes };
}

function emptyStage(rate: number): StageStats {
  return {
    stage: `probe${rate}`,
    offeredRate: rate,
    offered: 0,
    goodput: 0,
    goodputRate: 0,
    gaveUp: 0,
    conflicts: 0,
    retries: 0,
    errors: 0,
    conflictRate: 0,
    acquire: { p50: 0, p95: 0, p99: 0, count: 0 },
  };
}

/**
 * Checks the hold log k6 wrote and saves the verdict as safety-<stem>.json. Prints only what went
 * wrong (violations, error samples): an OK verdict goes into the run's one line.
 */
function checkSafety(outDir: string, stem: string, label: string, holdsPath: string, quiet = false): SafetyReport {
  const parsed = parseHoldLog(existsSync(holdsPath) ? readFileSync(holdsPath, 'utf8') : '');
  const safety = checkHolds(parsed.holds);
  const safetyFile = `safety-${stem}.json`;
  writeFileSync(join(outDir, safetyFile), `${JSON.stringify({ ...safety, malformed: parsed.malformed, errorSamples: parsed.errors.slice(0, 20) }, null, 2)}\n`);
  if (!safety.ok) console.error(formatSafety(label, safety, parsed.malformed, safetyFile));
  // Problems, not progress: shown for the expected-rate run, and for a probe only beside its violations.
  if (!quiet || !safety.ok) for (const sample of parsed.errors.slice(0, 3)) log(`error sample: ${sample}`);
  return safety;
}
