/**
 * npm run faults — drives the engine with concurrent clients against the project's 3-node cluster
 * while injecting one fault per run, records a history, checks it (faults/checker.ts) and prints a
 * table. The clients lock documents and tree paths (directories and files, shared and exclusive)
 * in every run unless --granularity restricts them.
 *
 * Faults (faults/catalog.ts): the primary's node killed, paused, or cut off from the other nodes by
 * iptables on loopback (TCP resets, silent drops, or drops of its HTTP port too: faults/partition.ts;
 * iptables is installed with apt-get when missing and we are root, else those faults are skipped with
 * the reason), the replica killed, holders that crash or stall past their lease, acquires stalled or
 * frozen between two store calls, and clients whose clocks are skewed within the engine's
 * maxClockSkewMs or five times beyond it (faults/skew.ts: a demonstration, whose violations are
 * counted and do not fail the run), and the lock index re-created mid-run as its next incarnation.
 * In every lock run, one call in five is a channel waiter (faults/wake.ts): it queues with a wake channel,
 * is woken through a notifier in memory that loses, repeats, throws and says gone, and claims; the
 * table says what the waiters were told and that each ended told or on its own channel's timeout.
 * work-revoke and work-revoke-kill run work that runs once instead (faults/work-once.ts): deliveries
 * of messages with idempotency keys, records, and an operator revoking under load; the checker then
 * also judges the records (faults/work-checker.ts) and the revokes.
 *
 * --short is what `npm test` runs (a primary kill, a dropped partition, skewed clocks: 25 s each);
 * --soak cycles through the faults until --cycles lock cycles are done (faults/soak.ts). It needs the
 * project's own nodes (it kills, pauses and cuts them off): with ES_URL set it does nothing.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SearchProduct } from '../functions/store/search-client.js';
import { clusterNodes, startCluster, stopCluster } from '../infra/es/cluster.js';
import { ELASTICSEARCH, OPENSEARCH } from '../infra/es/distribution.js';
import { chooseStore, STORE_FLAG, STORE_RULE } from '../infra/lib/store-target.js';
import { numberFlag, parseFlags, printHelp, UsageError } from '../tools/cli/flags.js';
import { runCli } from '../tools/cli/run-cli.js';
import { DESCRIPTIONS, EXPECTED_TO_BREAK, FAULTS, type Fault, isPartition, SHORT_FAULTS } from './catalog.js';
import { type RunResult, removeLeftoverIndices, runFault } from './fault-run.js';
import { type Firewall, openFirewall } from './partition.js';
import { failsRun, renderTable, type Skipped } from './report.js';
import { soak } from './soak.js';
import { emptyTally, type Workload, type WorkloadGranularity } from './workload.js';

const GRANULARITIES: readonly WorkloadGranularity[] = ['mixed', 'document', 'tree'];
const SOAK_FAULTS = FAULTS.filter((fault) => !EXPECTED_TO_BREAK.includes(fault));

const USAGE = `usage: npm run faults [-- options]

Drives the engine against the project's 3-node cluster (Elasticsearch, or OpenSearch with --store
opensearch) while injecting one fault per run, checks the history (mutual exclusion, lost grants,
fencing order, forged tokens; in the work runs also work recorded once and revoked leases recording
nothing) and prints a table. Needs the project's own nodes: with ES_URL (or, for
OpenSearch, OPENSEARCH_URL) set it does nothing. The partitions need iptables and root (the
runner installs iptables with apt-get when missing); without them they are skipped, saying why.
  --faults LIST        comma-separated, from:
${FAULTS.map((fault) => `                         ${fault.padEnd(18)} ${DESCRIPTIONS[fault]}`).join('\n')}
                       (default: all; --short: ${SHORT_FAULTS.join(',')}; --soak: all but ${EXPECTED_TO_BREAK.join(',')})
  --duration S         seconds per run, a whole number >= 10 (default 60; --short: 25)
  --clients N          concurrent clients (default 8; --soak: 24)
  --keys N             document ids they contend for (default 4; --soak: 16); tree locks use /d0../d2 and /d{i}/f0..f3
  --granularity G      mixed (document and tree locks), document or tree (default mixed)
  --short              what npm test runs
  --soak               run the faults round and round until --cycles lock cycles are done, with progress
                       lines and the figures at the end; stops after a run with a violation
  --cycles N           the soak's target (default 100000; only with --soak)
  --store S            ${STORE_RULE}
  --shards N           primary shards of each run's lock index, 1 to 9 (default 1): the clients' namespace
                       lives on one of them, whose primary the node faults aim at
  --stop-after         stop the cluster at the end
  --verbose            print stack traces on errors (also DEBUG=1)
Results: results/faults/<time>/: each run's history (the soak's: only runs with a violation) and the table.
Exit codes: 0 no violation (clock-skew-beyond's are expected), 1 a violation or a failure, 2 a usage mistake.`;

interface Options {
  store: SearchProduct;
  shards: number;
  faults: Fault[];
  durationS: number;
  clients: number;
  workload: Workload;
  soak?: { cycles: number };
  stopAfter: boolean;
}

function parseOptions(argv: string[]): Options | undefined {
  const { values } = parseFlags(argv, {
    faults: { type: 'string' },
    duration: { type: 'string' },
    clients: { type: 'string' },
    keys: { type: 'string' },
    granularity: { type: 'string' },
    short: { type: 'boolean' },
    soak: { type: 'boolean' },
    cycles: { type: 'string' },
    shards: { type: 'string' },
    'stop-after': { type: 'boolean' },
    ...STORE_FLAG,
  });
  if (printHelp(values, USAGE)) return undefined;
  const value = (flag: string): string | undefined => values[flag.slice(2)] as string | undefined;
  const short = values.short === true;
  const soaking = values.soak === true;
  if (short && soaking) throw new UsageError('--soak: cannot be combined with --short');
  if (!soaking && value('--cycles') !== undefined) throw new UsageError('--cycles: only with --soak');
  const integer = (flag: string, fallback: number, min: number): number => numberFlag(flag, value(flag), { integer: true, min }, fallback);
  const fallback = short ? SHORT_FAULTS : soaking ? SOAK_FAULTS : FAULTS;
  const faults = (value('--faults') ?? fallback.join(',')).split(',').map((name) => name.trim());
  const unknown = faults.filter((name) => !(FAULTS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new UsageError(`--faults: unknown fault ${unknown.map((name) => `"${name}"`).join(', ')}; known: ${FAULTS.join(', ')}`);
  const breaking = faults.filter((name) => (EXPECTED_TO_BREAK as readonly string[]).includes(name));
  if (soaking && breaking.length > 0) throw new UsageError(`--faults: ${breaking.join(', ')} is expected to break, so it has no place in a soak`);
  const granularity = (value('--granularity') ?? 'mixed') as WorkloadGranularity;
  if (!GRANULARITIES.includes(granularity)) throw new UsageError(`--granularity: must be ${GRANULARITIES.join(', ')} (got "${granularity}")`);
  return {
    store: chooseStore(values.store),
    shards: numberFlag('--shards', value('--shards'), { integer: true, min: 1, max: 9 }, 1),
    faults: faults as Fault[],
    durationS: integer('--duration', short ? 25 : 60, 10),
    clients: integer('--clients', soaking ? 24 : 8, 1),
    // The soak's clients are more, on more ids, work less and retry sooner, so that 100,000 cycles take
    // well under an hour here; the tree stays as small, so tree locks still meet all the time.
    workload: soaking
      ? { granularity, keys: integer('--keys', 16, 1), directories: 3, workMs: { min: 5, max: 30 }, retryMaxDelayMs: 250 }
      : { granularity, keys: integer('--keys', 4, 1), directories: 3, workMs: { min: 20, max: 80 } },
    ...(soaking ? { soak: { cycles: integer('--cycles', 100_000, 1) } } : {}),
    stopAfter: values['stop-after'] === true,
  };
}

async function main(argv: string[]): Promise<number> {
  const options = parseOptions(argv);
  if (!options) return 0;
  const log = (line: string): void => console.error(`[faults] ${line}`);
  const distribution = options.store === 'opensearch' ? OPENSEARCH : ELASTICSEARCH;
  if (process.env[distribution.urlEnv]) {
    log(`skipped: ${distribution.urlEnv} is set, and the fault runner kills, pauses and cuts off nodes, so it runs only on the project's own cluster`);
    return 0;
  }
  log(`${distribution.product} ${distribution.version}, 3 nodes`);
  const nodes = clusterNodes(3, undefined, distribution);
  await startCluster(3, (line) => log(line), distribution);
  await removeLeftoverIndices(nodes, log);
  const dir = join('results', 'faults', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(dir, { recursive: true });
  let faults = options.faults;
  const skipped: Skipped[] = [];
  let firewall: Firewall | undefined;
  if (faults.some(isPartition)) {
    const opening = openFirewall(nodes, log);
    if ('unavailable' in opening) {
      log(`partition faults skipped: ${opening.unavailable}`);
      skipped.push(...faults.filter(isPartition).map((fault) => ({ fault, reason: opening.unavailable })));
      faults = faults.filter((fault) => !isPartition(fault));
    } else firewall = opening.firewall;
  }
  let ok: boolean;
  try {
    if (options.soak) {
      if (faults.length === 0) throw new UsageError('--faults: nothing left to soak with (the partitions were skipped)');
      ok = await soak(
        { cycles: options.soak.cycles, faults, durationS: options.durationS, clients: options.clients, workload: options.workload, dir, firewall },
        nodes,
        log,
      );
    } else {
      const results: RunResult[] = [];
      for (const fault of faults) {
        const settings = {
          durationS: options.durationS,
          clients: options.clients,
          workload: options.workload,
          shards: options.shards,
          firewall,
          tally: emptyTally(),
        };
        results.push(await runFault(fault, { ...settings, results: { dir, name: fault, keep: 'always' } }, nodes, log));
      }
      const table = [
        `${distribution.product} ${distribution.version}, 3 nodes, ${options.shards} primary shard${options.shards === 1 ? '' : 's'}`,
        ...renderTable(results, skipped),
      ];
      console.log(`\n${table.join('\n')}`);
      writeFileSync(join(dir, 'table.txt'), `${table.join('\n')}\n`);
      ok = !results.some(failsRun);
    }
  } finally {
    firewall?.close();
  }
  if (options.stopAfter) await stopCluster(nodes.length, distribution);
  const stopCommand = options.store === 'opensearch' ? 'npm run opensearch-cluster:stop' : 'npm run cluster:stop';
  console.log(`\nresults: ${dir}/${options.stopAfter ? '' : `; the cluster keeps running (${stopCommand})`}`);
  return ok ? 0 : 1;
}

runCli(main);
