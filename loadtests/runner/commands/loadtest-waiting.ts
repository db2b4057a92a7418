/**
 * npm run loadtest:waiting [-- --callers 24 --keys 2 --readers 80 --seconds 20 --budget-ms 10000]
 *
 * Waiting for a held lock, polling against queueing, on the same workload (waiting/scenario.ts):
 * callers in this process contend for a few hot locks through the engine on the lock store of
 * --store (ES_URL, OPENSEARCH_URL or the project's own node, started as the kit starts it), first all
 * polling, then all queueing (a short warm-up before, not counted). Prints progress, then a table
 * (grants, wait p50/p99/max, overtakes, writers passed by later readers, Elasticsearch requests per
 * grant, timeouts, safety) and the ratios, and writes results/waiting-<time>/ (waiting.md,
 * waiting.html, waiting.svg, waiting.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chooseStore, STORE_FLAG, STORE_RULE } from '../../../infra/lib/store-target.js';
import { listFlag, numberFlag, parseFlags, printHelp } from '../../../tools/cli/flags.js';
import { runCli } from '../../../tools/cli/run-cli.js';
import { openEngineSession } from '../engine/session.js';
import { describeScenario, waitingChart, waitingHtml, waitingMarkdown, waitingRatios, waitingTable } from '../render/waiting.js';
import { WAIT_MODES } from '../waiting/analysis.js';
import { DEFAULT_WAITING, runWaitingMode, type WaitingRun, type WaitingScenario } from '../waiting/scenario.js';

const d = DEFAULT_WAITING;
const USAGE = `usage: npm run loadtest:waiting -- [options]

Waiting for a held lock, polling (waitMs 0, retried with the kit's backoff) against queueing
(waitMs > 0: the lock's fair queue), through the engine in this process on ES_URL (+ ES_API_KEY),
OPENSEARCH_URL or the project's own node: callers in closed loops on a few hot locks, each mode in
a run of its own on the same workload. Writes results/waiting-<time>/.
  --store S            ${STORE_RULE}
  --callers N          concurrent callers (default ${d.callers})
  --keys N             hot document locks (default ${d.keys})
  --readers PCT        share of calls that read, shared lock (default ${d.readerShare * 100})
  --hold-ms MS         critical section (default ${d.holdMs})
  --think-ms MS        mean pause between a release and the next arrival, uniform 0 to twice this (default ${d.thinkMs})
  --budget-ms MS       how long a caller waits for one grant before it gives up (default ${d.budgetMs})
  --seconds S          arrivals per mode; calls that arrived are seen to their end (default ${d.seconds})
  --warmup-seconds S   an uncounted queueing run first (default 2; 0: none)
  --modes LIST         polling,queueing (default both, in that order)
  --seed N             the workload's draws (default ${d.seed})
  --verbose            stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed (the lock store unreachable, or a safety violation), 2 a usage mistake.`;

const say = (line: string): void => console.log(`[waiting] ${line}`);

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    ...STORE_FLAG,
    callers: { type: 'string' },
    keys: { type: 'string' },
    readers: { type: 'string' },
    'hold-ms': { type: 'string' },
    'think-ms': { type: 'string' },
    'budget-ms': { type: 'string' },
    seconds: { type: 'string' },
    'warmup-seconds': { type: 'string' },
    modes: { type: 'string' },
    seed: { type: 'string' },
  });
  if (printHelp(values, USAGE)) return 0;
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const int = (flag: string, rule: { min: number; max: number }, fallback: number): number =>
    numberFlag(`--${flag}`, text(flag), { integer: true, ...rule }, fallback);
  const scenario: WaitingScenario = {
    ...d,
    callers: int('callers', { min: 1, max: 500 }, d.callers),
    keys: int('keys', { min: 1, max: 100 }, d.keys),
    readerShare: int('readers', { min: 0, max: 100 }, d.readerShare * 100) / 100,
    holdMs: int('hold-ms', { min: 0, max: 60_000 }, d.holdMs),
    thinkMs: int('think-ms', { min: 0, max: 60_000 }, d.thinkMs),
    budgetMs: int('budget-ms', { min: 1_000, max: 60_000 }, d.budgetMs),
    seconds: int('seconds', { min: 1, max: 3_600 }, d.seconds),
    seed: int('seed', { min: 0, max: 2 ** 31 }, d.seed),
  };
  const warmupS = int('warmup-seconds', { min: 0, max: 60 }, 2);
  const modes = text('modes') !== undefined ? listFlag('--modes', text('modes')!, WAIT_MODES, 'mode') : [...WAIT_MODES];
  const product = chooseStore(values.store);
  const command = `npm run loadtest:waiting${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`;

  const session = await openEngineSession(product);
  const { store, target, server } = session;
  const runId = `w${Date.now().toString(36)}`;
  const runs: WaitingRun[] = [];
  say(`${modes.join(' then ')} on ${server} at ${store.url} (lock index ${target.index}): ${describeScenario(scenario)}`);
  try {
    if (warmupS > 0) {
      say(`warm-up: ${warmupS} s queueing, not counted`);
      await runWaitingMode(target, 'queueing', { ...scenario, seconds: warmupS }, { namespace: `lt-wait-${runId}-warmup` });
    }
    for (const mode of modes) {
      say(`${mode}: ${scenario.seconds} s of arrivals, then every call to its end`);
      const run = await runWaitingMode(target, mode, scenario, { namespace: `lt-wait-${runId}-${mode}`, progress: say });
      const f = run.figures;
      say(
        `${mode} done in ${(run.elapsedMs / 1000).toFixed(1)} s: ${f.grants} grants, wait p50 ${Math.round(f.wait.p50)} / p99 ${Math.round(f.wait.p99)} / max ${Math.round(f.wait.max)} ms, ` +
          `${f.overtakes} overtakes, ${f.requestsPerGrant.toFixed(1)} ES requests per grant, ${f.timeouts} timed out, ${f.errors} errors, ${run.releaseRetries} releases tried again` +
          (run.safety.ok ? '' : `, SAFETY VIOLATED (${run.safety.violationCount})`) +
          (run.errorSamples.length > 0 ? `; e.g. ${run.errorSamples[0]}` : ''),
      );
      runs.push(run);
    }
  } finally {
    await session.close();
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  const dir = resolve('results', `waiting-${stamp}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'waiting.svg'), `${waitingChart(runs, scenario)}\n`);
  writeFileSync(join(dir, 'waiting.md'), waitingMarkdown(runs, scenario, { server, command, chart: 'waiting.svg' }));
  writeFileSync(join(dir, 'waiting.html'), waitingHtml(runs, scenario, { server, command }));
  const figures = runs.map((run) => ({
    ...run.figures,
    safety: { ok: run.safety.ok, holds: run.safety.holds, violations: run.safety.violationCount },
    leftoverLocks: run.leftoverLocks,
    releaseRetries: run.releaseRetries,
    errorSamples: run.errorSamples,
    elapsedMs: run.elapsedMs,
  }));
  writeFileSync(join(dir, 'waiting.json'), `${JSON.stringify({ server, command, scenario, runs: figures }, null, 2)}\n`);
  console.log('');
  console.log(`Waiting for a held lock on ${server}: ${describeScenario(scenario)}.`);
  console.log('');
  console.log(waitingTable(runs));
  const ratios = waitingRatios(runs);
  if (ratios) console.log(`\n${ratios}`);
  console.log(`\nwritten to ${dir} (waiting.md, waiting.html, waiting.svg, waiting.json)`);
  const unsafe = runs.some((run) => !run.safety.ok);
  if (unsafe) console.error('[waiting] safety violated: the locks granted conflicting holds');
  return unsafe ? 1 : 0;
}

runCli(main);
