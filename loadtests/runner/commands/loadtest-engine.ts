/**
 * npm run loadtest:engine [-- --granularities document,tree --trials 1 --probe-seconds 3 --slo-p99 250 --max-rate 1280 --mix 67/23/5/3/2]
 *
 * The lock layer alone: per granularity, the kit's capacity search (capacity.ts) with the engine driver
 * (engine/probe.ts: the kit's one iteration through the engine in this process, no HTTP, no
 * serverless-offline) on the lock store of --store (ES_URL, OPENSEARCH_URL or the project's own node),
 * then a table of capacities. The default
 * workload, retry policy, TTL, VU ceiling, objective and search are the kit's (defaults.ts, config.ts).
 */

import { STORE_RULE } from '../../../infra/lib/store-target.js';
import { numberFlag, parseFlags, printHelp, UsageError } from '../../../tools/cli/flags.js';
import { runCli } from '../../../tools/cli/run-cli.js';
import { type Granularity, validateWorkload } from '../../shared/workload.js';
import type { Bracket } from '../capacity.js';
import { parseMix } from '../cli.js';
import { defaultConfig } from '../config.js';
import type { EngineProbeResult } from '../engine/probe-result.js';
import { type EngineCapacity, engineDriverOptions, searchEngineCapacity } from '../engine/search.js';
import { openEngineSession } from '../engine/session.js';
import { readSearchFlags, SEARCH_FLAGS } from '../search-flags.js';
import { spreadOf } from '../trials.js';

const config = defaultConfig();

const USAGE = `usage: npm run loadtest:engine -- [options]

Capacity of each lock granularity through the engine alone (no HTTP, no serverless-offline): the
load test's workload and capacity search, its operations sent to a lock engine in this process on
ES_URL (+ ES_API_KEY), OPENSEARCH_URL or the project's own node, each probe's critical sections safety-checked.
  --store S            ${STORE_RULE}
  --granularities LIST default ${config.granularities.join(',')} (also --strategies)
  --trials N           searches per granularity, interleaved; capacity as median and range (default ${config.engine.trials})
  --probe-seconds S    length of each probe (default ${config.engine.probeS})
  --slo-p99 MS         objective: acquire p99 at most this (default ${config.capacity.objective.p99Ms})
  --max-rate N         highest rate the search tries (default ${config.capacity.search.maxRate})
  --mix R/E/N[/C/D]    weights of read/edit/rename/create/delete, e.g. 67/23/5/3/2 or
                       read=70,edit=25,rename=5 (default 67/23/5/3/2)
  --verbose            stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed (the lock store unreachable, or a safety violation), 2 a usage mistake.`;

const say = (line: string): void => console.log(`[engine] ${line}`);

function describeProbe(granularity: Granularity, trial: number, run: EngineProbeResult): string {
  const { verdict, stage } = run;
  return (
    `${granularity} t${trial} probe ${verdict.rate} ops/s: ${verdict.good ? 'met the objective' : `missed it (${verdict.reasons.join(', ')})`}; ` +
    `goodput ${verdict.goodputRate.toFixed(1)}, acquire p99 ${Math.round(verdict.acquireP99)} ms, ${stage.gaveUp} gave up, ${stage.errors} errors, ` +
    `${run.dropped} dropped, arrival lag p99 ${run.schedule.lagP99Ms.toFixed(1)} ms` +
    (run.safety.ok ? '' : `, SAFETY VIOLATED (${run.safety.violationCount})`) +
    (run.errorSamples.length > 0 ? `; e.g. ${run.errorSamples[0]}` : '')
  );
}

function table(granularities: Granularity[], results: Map<Granularity, EngineCapacity[]>, trials: number): string {
  const rows = granularities.map((granularity) => {
    const searches = results.get(granularity) ?? [];
    const capacity = spreadOf(searches.map((search) => search.search.capacity));
    const missed = searches.map((search) => search.search.failedAt ?? '-').join(', ');
    const probes = searches.map((search) => search.search.probes.map((probe) => `${probe.rate}${probe.good ? '✓' : '✗'}`).join(' ')).join(' | ');
    const perOp = searches.map((search) => search.requestsPerOp.toFixed(1)).join(', ');
    const violations = searches.reduce((sum, search) => sum + search.violationCount, 0);
    const phantoms = searches.reduce((sum, search) => sum + search.phantomCount, 0);
    const atMost = searches.some((search) => search.search.failedAt === null) ? ' (search maximum)' : '';
    return [
      granularity,
      `${trials > 1 ? `${capacity.median} [${capacity.min}-${capacity.max}]` : capacity.median}${atMost}`,
      missed,
      perOp,
      violations === 0 ? 'ok' : `${violations} violation(s)`,
      String(phantoms),
      probes,
    ];
  });
  const header = [
    'granularity',
    trials > 1 ? 'capacity ops/s (median [range])' : 'capacity ops/s',
    'missed at',
    'store requests/op',
    'safety',
    'semantic conflicts',
    'probes (ops/s)',
  ];
  return [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { ...SEARCH_FLAGS, 'slo-p99': { type: 'string' }, 'max-rate': { type: 'string' }, mix: { type: 'string' } });
  if (printHelp(values, USAGE)) return 0;
  const { product, granularities, trials, probeS } = readSearchFlags(values, {
    granularities: config.granularities,
    trials: config.engine.trials,
    probeS: config.engine.probeS,
    maxProbeS: 120,
  });
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const objective = {
    ...config.capacity.objective,
    p99Ms: numberFlag('--slo-p99', text('slo-p99'), { min: 0, exclusiveMin: true }, config.capacity.objective.p99Ms),
  };
  const maxRate = numberFlag('--max-rate', text('max-rate'), { min: 1 }, config.capacity.search.maxRate);
  const search = { ...config.capacity.search, maxRate, startRate: Math.min(config.capacity.search.startRate, maxRate) };
  const workload = { ...config.workloads[0]!, ...(text('mix') !== undefined ? { mix: parseMix(text('mix')!) } : {}) };
  const problems = validateWorkload(workload);
  if (problems.length > 0) throw new UsageError(`--mix: ${problems.join('; ')}`);
  const runConfig = { ...config, capacity: { ...config.capacity, objective, search } };

  const session = await openEngineSession(product);
  const { store, target, server } = session;
  const runId = `e${Date.now().toString(36)}`;
  const results = new Map<Granularity, EngineCapacity[]>();
  const brackets = new Map<Granularity, Bracket>();
  say(
    `${granularities.join(', ')} on ${server} at ${store.url} (lock index ${target.index}), ${trials} trial(s), ${probeS} s probes, ` +
      `objective: goodput >= ${objective.goodputRatio * 100}%, acquire p99 <= ${objective.p99Ms} ms, errors < ${objective.errorRate * 100}%`,
  );
  try {
    for (let trial = 1; trial <= trials; trial++) {
      for (const granularity of granularities) {
        const options = engineDriverOptions(runConfig, { target, granularity, workload, runId: `${runId}-t${trial}`, probeS });
        const result = await searchEngineCapacity(options, search, brackets.get(granularity), (run) => say(describeProbe(granularity, trial, run)));
        if (!brackets.has(granularity)) brackets.set(granularity, { good: result.search.capacity, bad: result.search.failedAt });
        results.set(granularity, [...(results.get(granularity) ?? []), result]);
        say(
          `${granularity} capacity (trial ${trial}): ${result.search.capacity} ops/s` +
            (result.search.failedAt !== null ? `, missed the objective at ${result.search.failedAt} ops/s` : ', the search maximum') +
            (result.search.truncated ? ' (stopped at the probe limit)' : '') +
            ` after ${result.search.probes.length} probe(s)`,
        );
      }
    }
  } finally {
    await session.close();
  }
  console.log('');
  console.log(`Capacity through the engine alone on ${server} (workload ${workload.name}, mix ${Object.values(workload.mix).join('/')}):`);
  console.log('');
  console.log(table(granularities, results, trials));
  const unsafe = [...results.values()].flat().some((result) => !result.safetyOk);
  if (unsafe) console.error('[engine] safety violated: the locks granted conflicting holds (see the probe lines above)');
  return unsafe ? 1 : 0;
}

runCli(main);
