/**
 * One strategy on one workload: warm the functions, run k6, check its critical sections for
 * safety, and read its numbers. Says what went wrong instead of throwing, so the loop can go on.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { runConfig } from '../../loadtests/lib/defaults.js';
import { namespaceFor, type Strategy, type WorkloadConfig } from '../../loadtests/lib/workload.js';
import { checkHolds, formatSafety, parseHoldLog, type SafetyReport } from './checker.js';
import { type LoadtestConfig, strategySeconds, warmupConcurrency } from './config.js';
import type { Interrupt } from './interrupt.js';
import { describeK6Exit, K6_ABORTED, runK6 } from './k6-process.js';
import { log } from './log.js';
import { extractResult, type K6Summary, type StrategyResult } from './summary.js';
import { DEFAULT_WARMUP, warmUp } from './warmup.js';

export interface RunContext {
  config: LoadtestConfig;
  k6: string;
  runId: string;
  baseUrl: string;
  outDir: string;
  interrupt: Interrupt;
}

export interface StrategyOutcome {
  result?: StrategyResult;
  notes: string[];
  /** Problems that fail the whole run (k6 errors, safety violations). */
  failures: number;
  /** No further run can succeed (the service failed k6's health check), or the user interrupted. */
  stop: boolean;
}

export async function warmFunctions(ctx: RunContext): Promise<void> {
  const concurrency = warmupConcurrency(ctx.config);
  if (concurrency === 0) return;
  const warm = await warmUp(ctx.baseUrl, `lt-warmup-${ctx.runId}`, { ...DEFAULT_WARMUP, concurrency });
  log(
    `warm-up: ${warm.rounds} round(s) of up to ${concurrency} concurrent acquire+release, last round ${warm.lastRoundMs} ms` +
      (warm.warm ? '' : ' (still slow; early numbers may include cold starts)') +
      (warm.failures ? `, ${warm.failures} failed: ${warm.sample}` : ''),
  );
}

export async function runStrategy(ctx: RunContext, workload: WorkloadConfig, strategy: Strategy): Promise<StrategyOutcome> {
  const { config } = ctx;
  const stem = `${workload.name}-${strategy}`;
  const k6Config = runConfig({
    runId: ctx.runId,
    strategy,
    namespace: namespaceFor(strategy, ctx.runId, workload.name),
    workload,
    schedule: config.schedule,
    retry: config.retry,
    ttlMs: config.ttlMs,
  });
  const run = await runK6({
    k6: ctx.k6,
    k6Config,
    stem,
    baseUrl: ctx.baseUrl,
    outDir: ctx.outDir,
    scheduledS: strategySeconds(config.schedule),
    interrupt: ctx.interrupt,
  });
  const outcome: StrategyOutcome = { notes: [], failures: 0, stop: false };
  if (run.exitCode !== 0) {
    outcome.failures++;
    log(describeK6Exit(run.exitCode));
  }
  const safety = checkSafety(ctx.outDir, stem, `${strategy}/${workload.name}`, run.holdsPath);
  if (!safety.ok) outcome.failures++;
  if (!existsSync(run.summaryPath)) {
    outcome.notes.push(`${strategy} on ${workload.name}: k6 wrote no summary (exit ${run.exitCode})`);
    if (run.exitCode === K6_ABORTED) {
      outcome.notes.push('the service failed its health check; remaining runs skipped');
      outcome.stop = true;
    }
    return outcome;
  }
  if (ctx.interrupt.interrupted) {
    outcome.notes.push(
      `${strategy} on ${workload.name} was interrupted; its partial numbers are left out of the report (see ${relative(ctx.outDir, run.summaryPath)})`,
    );
    outcome.stop = true;
    return outcome;
  }
  const summary = JSON.parse(readFileSync(run.summaryPath, 'utf8')) as K6Summary;
  outcome.result = extractResult({
    summary,
    workload: workload.name,
    strategy,
    steady: config.schedule.steady,
    ramp: config.schedule.ramp,
    k6ExitCode: run.exitCode,
    safety: { ok: safety.ok, holds: safety.holds, violationCount: safety.violationCount, warningCount: safety.warningCount },
  });
  if (!outcome.result.thresholdsOk) log(`thresholds failed: ${outcome.result.failedThresholds.join('; ')}`);
  return outcome;
}

/** Checks the hold log k6 wrote, saves the verdict as safety-<stem>.json and prints it. */
function checkSafety(outDir: string, stem: string, label: string, holdsPath: string): SafetyReport {
  const parsed = parseHoldLog(existsSync(holdsPath) ? readFileSync(holdsPath, 'utf8') : '');
  const safety = checkHolds(parsed.holds);
  const safetyFile = `safety-${stem}.json`;
  writeFileSync(join(outDir, safetyFile), `${JSON.stringify({ ...safety, malformed: parsed.malformed, errorSamples: parsed.errors.slice(0, 20) }, null, 2)}\n`);
  (safety.ok ? log : console.error)(formatSafety(label, safety, parsed.malformed, safetyFile));
  for (const sample of parsed.errors.slice(0, 3)) log(`error sample: ${sample}`);
  return safety;
}
