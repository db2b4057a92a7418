/**
 * npm run loadtest [-- options]   (see --help)
 *
 * Starts Elasticsearch + the lock index + serverless-offline (scripts/stack.ts) unless --target is
 * given, seeds the file tree, runs the k6 workload once per strategy with the same offered load,
 * checks every run's critical sections for safety, writes results/<timestamp>/ and prints a table
 * and a recommendation. Stops what it started on success, failure and Ctrl-C.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { namespaceFor, type Strategy, type WorkloadConfig } from '../loadtests/lib/workload.js';
import { runConfig } from '../loadtests/lib/defaults.js';
import { ensureK6, K6_VERSION } from './k6.js';
import { checkHolds, formatSafety, parseHoldLog } from './loadtest/checker.js';
import { ConfigError, parseCli, strategySeconds, USAGE, warmupConcurrency, type LoadtestConfig } from './loadtest/config.js';
import {
  consoleReport,
  extractResult,
  goodputChart,
  latencyBars,
  renderHtml,
  renderMarkdown,
  type K6Summary,
  type ReportInput,
  type RunInfo,
  type StrategyResult,
} from './loadtest/report.js';
import { dropSeedIndex, seedIndexName, seedTree } from './loadtest/seed.js';
import { DEFAULT_WARMUP, warmUp } from './loadtest/warmup.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const K6_SCRIPT = join(ROOT, 'loadtests', 'locks.ts');

interface Stack {
  baseUrl: string;
  esUrl: string;
  stop(): Promise<void>;
}
type StartStack = (options?: { port?: number; lambdaPort?: number; log?: (line: string) => void; inProcess?: boolean }) => Promise<Stack>;
// Checked at compile time, loaded only in local mode (so --target needs none of the stack's dependencies).
type StackModule = typeof import('./stack.js');
const _signatureCheck: (f: StackModule['startStack']) => StartStack = (f) => f;
void _signatureCheck;

const log = (line: string): void => console.log(`[loadtest] ${line}`);
const phase = (line: string): void => console.log(`\n==> ${line}`);

/** scripts/stack.ts is loaded only in local mode, so --target works without it. */
async function loadStartStack(): Promise<StartStack> {
  const file = join(ROOT, 'scripts', 'stack.ts');
  if (!existsSync(file)) {
    throw new ConfigError(`${relative(process.cwd(), file)} is missing, so the local stack cannot be started; use --target URL against a running service.`);
  }
  const module = (await import(pathToFileURL(file).href)) as { startStack?: unknown };
  if (typeof module.startStack !== 'function') throw new ConfigError(`${file} does not export startStack()`);
  return module.startStack as StartStack;
}

async function healthStatus(baseUrl: string): Promise<number> {
  try {
    const response = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(5000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

async function waitHealthy(baseUrl: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let status = 0;
  while (Date.now() < deadline) {
    status = await healthStatus(baseUrl);
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new ConfigError(`GET ${baseUrl}/health answered ${status || 'nothing'} (expected 200) within ${timeoutMs / 1000} s`);
}

function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, '').replace(/:/g, '-');
}

class Interrupt {
  count = 0;
  child: ChildProcess | undefined;
  private forwardTimer: NodeJS.Timeout | undefined;

  install(): void {
    let last = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      // npm/npx forward the terminal's Ctrl-C to us as well: signals this close together are one press.
      if (Date.now() - last < 1000) return;
      last = Date.now();
      this.count++;
      if (this.count === 1) {
        console.error(`\n[loadtest] ${signal}: stopping k6, then the stack (press Ctrl-C again to hurry)`);
        // A terminal Ctrl-C reaches k6 too; forward only if it is still running a moment later.
        this.forwardTimer = setTimeout(() => this.child?.kill('SIGINT'), 1500);
      } else if (this.count === 2) {
        console.error(`[loadtest] ${signal} again: killing k6 (a third time exits without cleanup)`);
        clearTimeout(this.forwardTimer);
        this.child?.kill('SIGKILL');
      } else {
        process.exit(130);
      }
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onSignal);
  }

  get interrupted(): boolean {
    return this.count > 0;
  }
}

interface K6Run {
  exitCode: number | null;
  summaryPath: string;
  holdsPath: string;
}

function runK6(args: {
  k6: string;
  config: LoadtestConfig;
  workload: WorkloadConfig;
  strategy: Strategy;
  runId: string;
  baseUrl: string;
  outDir: string;
  interrupt: Interrupt;
}): Promise<K6Run> {
  const { config, workload, strategy, runId } = args;
  const stem = `${workload.name}-${strategy}`;
  const summaryPath = join(args.outDir, `summary-${stem}.json`);
  const holdsPath = join(args.outDir, `holds-${stem}.log`);
  const k6Config = runConfig({
    runId,
    strategy,
    namespace: namespaceFor(strategy, runId, workload.name),
    workload,
    schedule: config.schedule,
    retry: config.retry,
    ttlMs: config.ttlMs,
  });
  const argv = [
    'run',
    '--address',
    '',
    '--no-usage-report',
    `--console-output=${holdsPath}`,
    '-e',
    `LT_CONFIG=${JSON.stringify(k6Config)}`,
    '-e',
    `BASE_URL=${args.baseUrl}`,
    '-e',
    `SUMMARY_PATH=${summaryPath}`,
    K6_SCRIPT,
  ];
  const budgetMs = (strategySeconds(config.schedule) + 90) * 1000;
  return new Promise((resolveRun, reject) => {
    const child = spawn(args.k6, argv, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, K6_NO_USAGE_REPORT: 'true' } });
    args.interrupt.child = child;
    const watchdog = setTimeout(() => {
      console.error(`[loadtest] k6 ran past ${budgetMs / 1000} s; stopping it`);
      child.kill('SIGINT');
      setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
    }, budgetMs);
    child.once('error', (error) => {
      clearTimeout(watchdog);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(watchdog);
      args.interrupt.child = undefined;
      resolveRun({ exitCode: code ?? (signal ? 128 : null), summaryPath, holdsPath });
    });
  });
}

const K6_EXIT: Record<number, string> = {
  99: 'thresholds failed',
  105: 'k6 was interrupted',
  107: 'script error',
  108: 'test aborted (setup health check failed?)',
};

async function main(argv: string[]): Promise<number> {
  const { config, help } = parseCli(argv);
  if (help) {
    console.log(USAGE);
    return 0;
  }
  const started = new Date();
  const stamp = timestamp(started);
  const runId = stamp.replace(/-/g, '').toLowerCase();
  let outDir = resolve(config.resultsDir, stamp);
  for (let n = 2; existsSync(outDir); n++) outDir = resolve(config.resultsDir, `${stamp}-${n}`);
  const interrupt = new Interrupt();
  interrupt.install();

  const runs = config.workloads.length * config.strategies.length;
  const perRun = strategySeconds(config.schedule) + 3;
  phase(
    `load test ${runId}: ${config.strategies.join(', ')} x ${config.workloads.length} workload(s), ` +
      `about ${perRun} s each (${Math.ceil((runs * perRun) / 60)} min of k6)${config.smoke ? ' [smoke]' : ''}`,
  );
  const k6 = await ensureK6((line) => log(line));
  log(`k6 ${K6_VERSION}: ${k6}`);

  let stack: Stack | undefined;
  let seededIndex: string | undefined;
  const notes: string[] = [];
  const results: StrategyResult[] = [];
  let failures = 0;
  let baseUrl: string;
  try {
    if (config.target) {
      baseUrl = config.target;
      phase(`target ${baseUrl}: nothing is started locally`);
      const status = await healthStatus(baseUrl);
      if (status !== 200) throw new ConfigError(`GET ${baseUrl}/health answered ${status || 'nothing'}; is the stage deployed and reachable?`);
    } else {
      phase('starting the stack (Elasticsearch, lock index, serverless-offline)');
      const startStack = await loadStartStack();
      const stackStarted = Date.now();
      mkdirSync(outDir, { recursive: true });
      const stackLog = join(outDir, 'stack.log');
      stack = await startStack({
        ...(config.port ? { port: config.port, lambdaPort: config.port + 1 } : {}),
        // One warm handler instance serving requests concurrently: the run measures the locks, not
        // serverless-offline starting a worker per concurrent request. LOADTEST_LAMBDA_WORKERS=1 restores that.
        inProcess: process.env.LOADTEST_LAMBDA_WORKERS !== '1',
        // Everything goes to stack.log; the terminal gets the Elasticsearch lines.
        log: (line) => {
          appendFileSync(stackLog, `${line}\n`);
          if (line.startsWith('[es]')) log(`stack: ${line}`);
        },
      });
      baseUrl = stack.baseUrl.replace(/\/+$/, '');
      await waitHealthy(baseUrl, 60_000);
      log(`stack up in ${Math.round((Date.now() - stackStarted) / 1000)} s: ${baseUrl} (Elasticsearch ${stack.esUrl})`);
      if (config.seed && !interrupt.interrupted) {
        seededIndex = seedIndexName(runId);
        const documents = await seedTree(stack.esUrl, seededIndex, config.workloads);
        log(`seeded ${documents} file documents into ${seededIndex}`);
        notes.push(`tree seeded into Elasticsearch index ${seededIndex} (${documents} documents), deleted after the run`);
      }
    }
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, 'config.json'), `${JSON.stringify({ runId, baseUrl, ...config }, null, 2)}\n`);

    let index = 0;
    outer: for (const workload of config.workloads) {
      for (const strategy of config.strategies) {
        index++;
        if (interrupt.interrupted) break outer;
        phase(
          `[${index}/${runs}] ${strategy} on workload ${workload.name}: steady ${config.schedule.steady.rate} ops/s for ${config.schedule.steady.durationS} s` +
            (config.schedule.ramp.levels.length ? `, ramp ${config.schedule.ramp.levels.join('/')} ops/s` : ''),
        );
        const warmup = warmupConcurrency(config);
        if (warmup > 0) {
          const warm = await warmUp(baseUrl, `lt-warmup-${runId}`, { ...DEFAULT_WARMUP, concurrency: warmup });
          log(
            `warm-up: ${warm.rounds} round(s) of up to ${warmup} concurrent acquire+release, last round ${warm.lastRoundMs} ms` +
              (warm.warm ? '' : ' (still slow; early numbers may include cold starts)') +
              (warm.failures ? `, ${warm.failures} failed: ${warm.sample}` : ''),
          );
          if (interrupt.interrupted) break outer;
        }
        const run = await runK6({ k6, config, workload, strategy, runId, baseUrl, outDir, interrupt });
        if (run.exitCode !== 0) {
          failures++;
          log(`k6 exited ${run.exitCode}${run.exitCode !== null && K6_EXIT[run.exitCode] ? ` (${K6_EXIT[run.exitCode]})` : ''}`);
        }
        const log_ = existsSync(run.holdsPath) ? readFileSync(run.holdsPath, 'utf8') : '';
        const parsed = parseHoldLog(log_);
        const safety = checkHolds(parsed.holds);
        const safetyFile = `safety-${workload.name}-${strategy}.json`;
        writeFileSync(join(outDir, safetyFile), `${JSON.stringify({ ...safety, malformed: parsed.malformed, errorSamples: parsed.errors.slice(0, 20) }, null, 2)}\n`);
        const safetyLine = formatSafety(`${strategy}/${workload.name}`, safety, parsed.malformed, safetyFile);
        (safety.ok ? log : console.error)(safetyLine);
        if (!safety.ok) failures++;
        for (const sample of parsed.errors.slice(0, 3)) log(`error sample: ${sample}`);
        if (!existsSync(run.summaryPath)) {
          notes.push(`${strategy} on ${workload.name}: k6 wrote no summary (exit ${run.exitCode})`);
          if (run.exitCode === 108) {
            notes.push('the service failed its health check; remaining runs skipped');
            break outer;
          }
          continue;
        }
        if (interrupt.interrupted) {
          notes.push(`${strategy} on ${workload.name} was interrupted; its partial numbers are left out of the report (see ${relative(outDir, run.summaryPath)})`);
          break outer;
        }
        const summary = JSON.parse(readFileSync(run.summaryPath, 'utf8')) as K6Summary;
        const result = extractResult({
          summary,
          workload: workload.name,
          strategy,
          steady: config.schedule.steady,
          ramp: config.schedule.ramp,
          k6ExitCode: run.exitCode,
          safety: { ok: safety.ok, holds: safety.holds, violationCount: safety.violationCount, warningCount: safety.warningCount },
        });
        results.push(result);
        if (!result.thresholdsOk) log(`thresholds failed: ${result.failedThresholds.join('; ')}`);
      }
    }
    if (interrupt.interrupted) {
      notes.push('interrupted before all runs finished; numbers cover the completed runs only');
      failures++;
    }
  } finally {
    if (seededIndex && stack) {
      await dropSeedIndex(stack.esUrl, seededIndex).catch((error: unknown) => log(`could not delete ${seededIndex}: ${(error as Error).message}`));
    }
    if (stack) {
      phase('stopping the stack');
      await stack.stop().catch((error: unknown) => console.error(`[loadtest] stopping the stack failed: ${(error as Error).message}`));
    }
  }

  if (results.length === 0) {
    console.error('[loadtest] no strategy produced results');
    return interrupt.interrupted ? 130 : 1;
  }
  const info: RunInfo = {
    runId,
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    baseUrl,
    mode: config.target ? 'target' : 'local',
    k6: `k6 ${K6_VERSION}`,
    config,
    notes,
  };
  const input: ReportInput = { info, results };
  writeReports(outDir, input);
  phase(`results in ${relative(process.cwd(), outDir) || outDir}`);
  console.log(consoleReport(input));
  for (const note of notes) console.log(`note: ${note}`);
  if (failures > 0) console.error(`\n[loadtest] FAILED: ${failures} problem(s) above (safety violations, failed thresholds or k6 errors)`);
  return interrupt.interrupted ? 130 : failures > 0 ? 1 : 0;
}

function writeReports(outDir: string, input: ReportInput): void {
  const workloads = input.info.config.workloads.filter((w) => input.results.some((r) => r.workload === w.name));
  workloads.forEach((workload, i) => {
    const results = input.results.filter((r) => r.workload === workload.name);
    const svg = goodputChart(workload, results);
    writeFileSync(join(outDir, i === 0 ? 'goodput.svg' : `goodput-${workload.name}.svg`), `${svg}\n`);
    writeFileSync(join(outDir, i === 0 ? 'latency.svg' : `latency-${workload.name}.svg`), `${latencyBars(workload, results)}\n`);
  });
  writeFileSync(join(outDir, 'report.md'), renderMarkdown(input, { goodput: 'goodput.svg' }));
  writeFileSync(join(outDir, 'report.html'), renderHtml(input));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof ConfigError || (error instanceof Error && error.name === 'K6InstallError') ? `error: ${error.message}` : error);
    process.exit(1);
  },
);
