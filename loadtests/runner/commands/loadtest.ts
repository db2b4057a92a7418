/**
 * npm run loadtest [-- options]   (see --help)
 *
 * Starts the lock store (--store: Elasticsearch or OpenSearch) + the lock index + serverless-offline
 * (scripts/stack.ts) unless --target is given, seeds the file tree, runs the k6 workload once per granularity with the same offered load,
 * checks every run's critical sections for safety, writes results/<timestamp>/ and prints a table
 * and a recommendation. Stops what it started on success, failure and Ctrl-C.
 *
 * The jobs live in loadtests/runner/: cli.ts (flags and --config), service.ts (what is tested),
 * run.ts (the loop), ranking.ts (the winner), render/ (the reports).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describeServer, serverLabel } from '../../../infra/lib/server-info.js';
import { givenStore, type StoreEndpoint } from '../../../infra/lib/store-target.js';
import { runCli } from '../../../tools/cli/run-cli.js';
import { formatSeconds } from '../../../tools/shared/format-seconds.js';
import { parseCli, USAGE } from '../cli.js';
import { type LoadtestConfig, plannedSeconds } from '../config.js';
import { type EngineLayer, openEngineLayer } from '../engine/layer.js';
import { Interrupt } from '../interrupt.js';
import { ensureK6, K6_VERSION } from '../k6-binary.js';
import { log, phase, warn } from '../log.js';
import { consoleReport } from '../render/console.js';
import { writeReports } from '../render/files.js';
import type { ReportInput, RunInfo } from '../render/report-input.js';
import { nameRun, type RunName } from '../results-dir.js';
import { type RunOutcome, runAll } from '../run.js';
import { openService } from '../service.js';
import { TargetAccessError } from '../target-check.js';
import { applyUserWorkload, checkUserWorkload, readIndexPaths } from '../user-workload.js';

async function main(argv: string[]): Promise<number> {
  const { config, help } = parseCli(argv);
  if (help) {
    console.log(USAGE);
    return 0;
  }
  // A wrong or silent ES_URL (OPENSEARCH_URL) fails here, before k6 is built and the stack started.
  const given = givenStore(config.store);
  if (given && !config.target) await given.check();
  const run = nameRun(config.resultsDir);
  const { objective } = config.capacity;
  const interrupt = new Interrupt();
  interrupt.install();
  phase(
    `load test ${run.runId}: ${config.granularities.join(', ')} x ${config.workloads.length} workload(s) x ${config.trials} trial(s), ` +
      `about ${formatSeconds(plannedSeconds(config))} of k6 plus the stack's start${config.smoke ? ' [smoke]' : ''}; ` +
      `${config.schedule.steady.rate} ops/s for ${config.schedule.steady.durationS} s each` +
      (config.capacity.enabled ? `, then the capacity search (p99 <= ${objective.p99Ms} ms, goodput >= ${objective.goodputRatio * 100}%)` : '') +
      '; one line per run and probe',
  );
  // The user's paths and trace go to the results folder; paths from an index once the lock store answers.
  mkdirSync(run.outDir, { recursive: true });
  const { user } = config;
  const userNotes = user && !user.index ? applyUserWorkload(config, user, run.outDir) : [];
  const fromIndex = user?.index
    ? async (store: StoreEndpoint): Promise<string[]> => {
        const client = store.client();
        try {
          user.paths = await readIndexPaths(client, store.url, user.index!);
          checkUserWorkload(user);
        } finally {
          await client.close();
        }
        return applyUserWorkload(config, user, run.outDir);
      }
    : undefined;
  // The service first: a stage that refuses the kit fails here, before k6 is located (or built).
  const service = await openService(config, { runId: run.runId, outDir: run.outDir, interrupt }, fromIndex);
  service.notes.unshift(...userNotes);
  let outcome: RunOutcome;
  let engine: EngineLayer | undefined;
  let server: RunInfo['server'];
  try {
    const k6 = await ensureK6(log);
    log(`k6 ${K6_VERSION}: ${k6}`);
    server = service.store ? await describeStore(service.store) : undefined;
    if (server) log(`lock store: ${server.label} at ${server.url}`);
    mkdirSync(run.outDir, { recursive: true });
    writeFileSync(join(run.outDir, 'config.json'), `${JSON.stringify({ runId: run.runId, baseUrl: service.shownUrl, server, ...config }, null, 2)}\n`);
    engine = config.engine.enabled && service.store ? await openEngineLayer(service.store, run.runId, config) : undefined;
    if (config.engine.enabled && !engine)
      service.notes.push('the engine-only layer was not measured: set ES_URL or OPENSEARCH_URL to the cluster the stage uses');
    outcome = await runAll({
      config,
      k6,
      runId: run.runId,
      baseUrl: service.baseUrl,
      targetUrl: service.shownUrl,
      outDir: run.outDir,
      interrupt,
      ...(engine ? { engine } : {}),
    });
  } finally {
    await engine?.close();
    await service.close();
  }
  return report(config, run, { ...outcome, notes: [...service.notes, ...outcome.notes] }, service.shownUrl, server, interrupt.interrupted);
}

/** The server and version the report names: figures from another product or version are not comparable. */
async function describeStore(store: StoreEndpoint): Promise<NonNullable<RunInfo['server']>> {
  const client = store.client();
  try {
    return { label: serverLabel(await describeServer(client)), url: store.url };
  } finally {
    await client.close();
  }
}

/** Writes the reports, prints the table and the recommendation, and turns the outcome into the exit code. */
function report(config: LoadtestConfig, run: RunName, outcome: RunOutcome, baseUrl: string, server: RunInfo['server'], interrupted: boolean): number {
  const interruptedCode = 130;
  if (outcome.results.length === 0) {
    warn('no granularity produced results');
    return interrupted ? interruptedCode : 1;
  }
  const input: ReportInput = {
    info: {
      runId: run.runId,
      startedAt: run.startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      baseUrl,
      mode: config.target ? 'target' : 'local',
      k6: `k6 ${K6_VERSION}`,
      ...(server ? { server } : {}),
      config,
      notes: outcome.notes,
    },
    results: outcome.results,
  };
  writeReports(run.outDir, input);
  phase(`results in ${relative(process.cwd(), run.outDir) || run.outDir}`);
  console.log(consoleReport(input));
  for (const note of outcome.notes) console.log(`note: ${note}`);
  if (outcome.failures > 0) console.error(`\n[loadtest] FAILED: ${outcome.failures} problem(s) above (safety violations, failed thresholds or k6 errors)`);
  return interrupted ? interruptedCode : outcome.failures > 0 ? 1 : 0;
}

/** A stage that refuses the kit or does not answer: its one line, exit 1 (no stack trace, no hint to read one). */
async function mainOrRefusal(argv: string[]): Promise<number> {
  try {
    return await main(argv);
  } catch (error) {
    if (!(error instanceof TargetAccessError)) throw error;
    console.error(`error: ${error.message}`);
    return 1;
  }
}

runCli(mainOrRefusal);
