/**
 * npm run faults — drives the engine with concurrent clients against the project's 3-node cluster
 * while injecting one fault per run, records a history, checks it (faults/checker.ts) and prints a
 * table. Options: --duration S (per fault), --clients N, --keys N, --granularity document|tree,
 * --faults LIST (kill-primary, pause-primary, kill-replica, crash-holders, pause-holders, stall-acquirers:
 * multi-key acquires stalled past their TTL between two store calls, timeout-acquirers: multi-key
 * acquires frozen for good after their first write, as a Lambda timeout leaves them), --short
 * (what `npm test` runs: kill-primary and pause-primary, 30 s each), --stop-after (stop the cluster at
 * the end). It needs the project's own nodes (it kills and pauses them): with ES_URL set it does nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@elastic/elasticsearch';
import { LockEngine } from '../functions/core/engine.js';
import { LeaseLostError, LockContentionError, LockHeldError, LockOutcomeUnknownError, StoreUnavailableError } from '../functions/core/errors.js';
import type { Grant } from '../functions/core/model.js';
import { createElasticsearchClient, createLockEngine, deleteLockIndex, type ElasticsearchLockStore, ensureLockIndex } from '../functions/store/index.js';
import { type ClusterNode, clusterNodes, signalNode, startCluster, startNode, stopCluster, waitForNodes } from '../infra/es/cluster.js';
import { numberFlag, parseFlags, printHelp, runCli, UsageError } from '../infra/lib/cli.js';
import { checkHistory } from './checker.js';
import type { HeldKey, HistoryEvent } from './history.js';
import { interpose } from './interposed-store.js';

const FAULTS = ['kill-primary', 'pause-primary', 'kill-replica', 'crash-holders', 'pause-holders', 'stall-acquirers', 'timeout-acquirers'] as const;
type Fault = (typeof FAULTS)[number];

interface Options {
  durationS: number;
  clients: number;
  keys: number;
  granularity: 'document' | 'tree';
  faults: Fault[];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const USAGE = `usage: npm run faults [-- options]

Drives the engine against the project's 3-node cluster while injecting one fault per run, checks the
history and prints a table. Needs the project's own nodes: with ES_URL set it does nothing.
  --faults LIST        ${FAULTS.join(', ')} (default: all; --short: kill-primary,pause-primary)
  --duration S         seconds per fault, a whole number >= 10 (default 60; --short: 30)
  --clients N          concurrent clients (default 8)
  --keys N             keys they contend for (default 4)
  --granularity G      document or tree (default document)
  --short              what npm test runs
  --stop-after         stop the cluster at the end
  --verbose            print stack traces on errors (also DEBUG=1)
Exit codes: 0 no violation, 1 a violation or a failure, 2 a usage mistake.`;

function parseOptions(argv: string[]): (Options & { stopAfter: boolean }) | undefined {
  const { values } = parseFlags(argv, {
    faults: { type: 'string' },
    duration: { type: 'string' },
    clients: { type: 'string' },
    keys: { type: 'string' },
    granularity: { type: 'string' },
    short: { type: 'boolean' },
    'stop-after': { type: 'boolean' },
  });
  if (printHelp(values, USAGE)) return undefined;
  const value = (flag: string): string | undefined => values[flag.slice(2)] as string | undefined;
  const short = values.short === true;
  const integer = (flag: string, fallback: number, min: number): number => numberFlag(flag, value(flag), { integer: true, min }, fallback);
  const faults = (value('--faults') ?? (short ? 'kill-primary,pause-primary' : FAULTS.join(','))).split(',').map((name) => name.trim());
  const unknown = faults.filter((name) => !(FAULTS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new UsageError(`--faults: unknown fault ${unknown.map((name) => `"${name}"`).join(', ')}; known: ${FAULTS.join(', ')}`);
  const granularity = value('--granularity') ?? 'document';
  if (granularity !== 'document' && granularity !== 'tree') throw new UsageError(`--granularity: must be document or tree (got "${granularity}")`);
  return {
    stopAfter: values['stop-after'] === true,
    durationS: integer('--duration', short ? 30 : 60, 10),
    clients: integer('--clients', 8, 1),
    keys: integer('--keys', 4, 1),
    granularity,
    faults: faults as Fault[],
  };
}

/** Which cluster node holds the lock index's primary, and which its replica. */
async function shardNodes(client: Client, index: string, nodes: ClusterNode[]): Promise<{ primary?: ClusterNode; replica?: ClusterNode }> {
  const response = await client.searchShards({ index });
  const names = new Map(Object.entries(response.nodes).map(([id, node]) => [id, node.name]));
  const copies = response.shards.flat();
  const byCopy = (primary: boolean) =>
    nodes.find((node) => node.name === names.get(copies.find((copy) => copy.primary === primary && copy.state === 'STARTED')?.node ?? ''));
  return { primary: byCopy(true), replica: byCopy(false) };
}

interface Target {
  request: { granularity: 'document'; ids: string[] } | { granularity: 'tree'; path: string };
  /** What the checker judges: the documents and, for tree paths, the ancestors in intention mode. */
  keys: (exclusive: boolean) => HeldKey[];
}

function targetFor(options: Options, random: () => number, multiKey = false): Target {
  if (options.granularity === 'document' || multiKey) {
    const first = Math.floor(random() * options.keys);
    const ids = (multiKey || random() < 0.3) && options.keys > 1 ? [`k${first}`, `k${(first + 1) % options.keys}`] : [`k${first}`];
    return { request: { granularity: 'document', ids }, keys: (exclusive) => ids.map((id) => ({ key: `d|${id}`, mode: exclusive ? 'X' : 'S' })) };
  }
  const paths = ['/a', '/a/b', '/a/b/c', '/a/d', '/e'];
  const path = paths[Math.floor(random() * Math.min(paths.length, options.keys + 1))]!;
  const segments = path.slice(1).split('/');
  const above = segments.slice(0, -1).map((_, index) => `/${segments.slice(0, index + 1).join('/')}`);
  return {
    request: { granularity: 'tree', path },
    keys: (exclusive) => [
      ...above.map((ancestor) => ({ key: `t|${ancestor}`, mode: exclusive ? ('IX' as const) : ('IS' as const) })),
      { key: `t|${path}`, mode: exclusive ? ('X' as const) : ('S' as const) },
    ],
  };
}

const outcomeOf = (error: unknown): 'fail' | 'info' =>
  error instanceof LockOutcomeUnknownError || (error instanceof StoreUnavailableError && error.context.ambiguous) ? 'info' : 'fail';

/**
 * The acquirer faults act inside one client's acquire, between two of its store calls: each client
 * has its own engine over the shared store, with a hook that a call can arm.
 */
function clientEngine(
  store: ElasticsearchLockStore,
  settings: LockEngine['settings'],
): { engine: LockEngine; arm: (fault: 'stall' | 'freeze') => void; disarm: () => void } {
  let armed: 'stall' | 'freeze' | undefined;
  let writes = 0;
  const afterFirstWrite = async (): Promise<void> => {
    if (!armed || writes === 0) return;
    const fault = armed;
    armed = undefined;
    // Stalled past the TTL (2 s) between two rounds; or frozen for good, as a Lambda that timed out.
    await (fault === 'stall' ? sleep(2_400) : new Promise<never>(() => {}));
  };
  const hooked = interpose(store, {
    read: async (ids, next) => {
      await afterFirstWrite();
      return next(ids);
    },
    readPrimary: async (ids, next) => {
      await afterFirstWrite();
      return next(ids);
    },
    write: async (ops, next) => {
      await afterFirstWrite();
      const outcomes = await next(ops);
      writes++;
      return outcomes;
    },
  });
  return {
    engine: new LockEngine(hooked, settings),
    arm: (fault) => {
      armed = fault;
      writes = 0;
    },
    disarm: () => {
      armed = undefined;
    },
  };
}

async function runClient(
  shared: { store: ElasticsearchLockStore; settings: LockEngine['settings'] },
  options: Options,
  fault: Fault,
  id: number,
  until: number,
  history: HistoryEvent[],
): Promise<void> {
  const client = `c${id}`;
  const { engine, arm, disarm } = clientEngine(shared.store, shared.settings);
  const record = (event: Omit<HistoryEvent, 'client' | 'time'>): void => void history.push({ client, time: Date.now(), ...event });
  const acquirerFault = fault === 'stall-acquirers' || fault === 'timeout-acquirers';
  for (let call = 0; Date.now() < until; call++) {
    const target = targetFor(options, Math.random, acquirerFault);
    const exclusive = Math.random() < 0.7;
    const keys = target.keys(exclusive);
    const faulty = acquirerFault && Math.random() < 0.15;
    if (faulty) arm(fault === 'stall-acquirers' ? 'stall' : 'freeze');
    record({ type: 'invoke', op: 'acquire', keys });
    let grant: Grant;
    try {
      const acquiring = engine.acquire({
        namespace: 'faults',
        ...target.request,
        mode: exclusive ? 'exclusive' : 'shared',
        owner: client,
        ttlMs: 2_000,
        waitMs: 1_000,
        requestId: `${client}-${call}`,
      });
      // A frozen call never answers: the caller gives up on it after its own timeout, and uses a fresh engine.
      grant = await (faulty && fault === 'timeout-acquirers'
        ? Promise.race([acquiring, sleep(3_000).then(() => Promise.reject(Object.assign(new Error('the function timed out'), { name: 'FunctionTimeout' })))])
        : acquiring);
      disarm();
    } catch (error) {
      // An acquire refused before its first write never reached the fault: it must not carry over to the next call.
      disarm();
      if ((error as Error).name === 'FunctionTimeout') {
        record({ type: 'info', op: 'acquire', error: 'FunctionTimeout' });
        return runClient(shared, options, fault, id, until, history);
      }
      record({ type: outcomeOf(error), op: 'acquire', error: (error as Error).name });
      if (!(error instanceof LockHeldError || error instanceof LockContentionError)) await sleep(50);
      continue;
    }
    record({ type: 'ok', op: 'acquire', leaseId: grant.leaseId, keys, fencingToken: grant.fencingToken, expiresAt: grant.expiresAt });
    let leaseToken = grant.leaseToken;
    // The holder works, renewing once in a while; under pause-holders some stall past their lease and carry on.
    const stalls = fault === 'pause-holders' && Math.random() < 0.2;
    await sleep(stalls ? 2_300 : 20 + Math.random() * 60);
    if (stalls || Math.random() < 0.3) {
      record({ type: 'invoke', op: 'renew', leaseId: grant.leaseId });
      try {
        const renewal = await engine.renew({ leaseToken, ttlMs: 2_000 });
        leaseToken = renewal.leaseToken;
        record({ type: 'ok', op: 'renew', leaseId: grant.leaseId, fencingToken: renewal.fencingToken, expiresAt: renewal.expiresAt });
        await sleep(20);
      } catch (error) {
        record({ type: error instanceof LeaseLostError ? 'fail' : outcomeOf(error), op: 'renew', leaseId: grant.leaseId, error: (error as Error).name });
      }
    }
    // Under crash-holders some holders die holding the lock: the lease must run out on its own.
    if (fault === 'crash-holders' && Math.random() < 0.2) continue;
    record({ type: 'invoke', op: 'release', leaseId: grant.leaseId });
    try {
      const result = await engine.release({ leaseToken });
      record({ type: 'ok', op: 'release', leaseId: grant.leaseId, outcome: result.outcome });
    } catch (error) {
      record({ type: outcomeOf(error), op: 'release', leaseId: grant.leaseId, error: (error as Error).name });
    }
  }
}

async function injectFault(
  fault: Fault,
  client: Client,
  index: string,
  nodes: ClusterNode[],
  startedAt: number,
  durationMs: number,
  log: (line: string) => void,
): Promise<string> {
  await sleep(Math.min(8_000, durationMs / 4));
  if (fault === 'crash-holders' || fault === 'pause-holders') return 'holders crash or stall (20 % of them)';
  if (fault === 'stall-acquirers') return '15 % of acquires stall 2.4 s mid-call';
  if (fault === 'timeout-acquirers') return '15 % of acquires freeze after a write';
  const { primary, replica } = await shardNodes(client, index, nodes);
  const victim = fault === 'kill-replica' ? replica : primary;
  if (!victim) return `no ${fault === 'kill-replica' ? 'replica' : 'primary'} found`;
  const at = Math.round((Date.now() - startedAt) / 1000);
  if (fault === 'pause-primary') {
    const pauseMs = Math.min(20_000, durationMs / 2);
    log(`SIGSTOP ${victim.name} (primary) for ${pauseMs / 1000} s`);
    signalNode(victim, 'SIGSTOP');
    await sleep(pauseMs);
    signalNode(victim, 'SIGCONT');
    return `${victim.name} paused ${pauseMs / 1000} s at ${at} s`;
  }
  log(`kill -9 ${victim.name} (${fault === 'kill-replica' ? 'replica' : 'primary'})`);
  signalNode(victim, 'SIGKILL');
  await sleep(10_000);
  await startNode(victim, nodes, log);
  return `${victim.name} killed at ${at} s, restarted 10 s later`;
}

interface RunResult {
  fault: Fault;
  what: string;
  grants: number;
  errors: Record<string, number>;
  violations: ReturnType<typeof checkHistory>;
  longestGapMs: number;
  primaryTerms: number[];
}

async function runFault(fault: Fault, options: Options, nodes: ClusterNode[], log: (line: string) => void): Promise<RunResult> {
  const client = createElasticsearchClient({ url: nodes.map((node) => node.url), requestTimeoutMs: 5_000 });
  const index = `faults-${fault}-${randomBytes(3).toString('hex')}`;
  await ensureLockIndex(client, index);
  await client.cluster.health({ index, wait_for_status: 'green', timeout: '60s' });
  const { engine, store } = createLockEngine({ client, index, settings: { maxClockSkewMs: 100 } });
  const history: HistoryEvent[] = [];
  const startedAt = Date.now();
  const durationMs = options.durationS * 1_000;
  const until = startedAt + durationMs;
  log(`${fault}: ${options.clients} clients on ${options.keys} keys (${options.granularity}) for ${options.durationS} s`);
  const progress = setInterval(
    () =>
      log(
        `${fault}: ${Math.round((Date.now() - startedAt) / 1000)} s, ${history.filter((event) => event.op === 'acquire' && event.type === 'ok').length} grants`,
      ),
    10_000,
  );
  const [what] = await Promise.all([
    injectFault(fault, client, index, nodes, startedAt, durationMs, log),
    ...Array.from({ length: options.clients }, (_, id) => runClient({ store, settings: engine.settings }, options, fault, id, until, history)),
  ]);
  clearInterval(progress);
  await waitForNodes(nodes, nodes.length, 120_000);
  const grants = history.filter((event) => event.op === 'acquire' && event.type === 'ok').sort((a, b) => a.time - b.time);
  const errors: Record<string, number> = {};
  for (const event of history) if (event.error) errors[`${event.op} ${event.error}`] = (errors[`${event.op} ${event.error}`] ?? 0) + 1;
  const times = [startedAt, ...grants.map((event) => event.time), until];
  const longestGapMs = Math.max(...times.slice(1).map((time, position) => time - times[position]!));
  const primaryTerms = [...new Set(grants.map((event) => Number(BigInt(event.fencingToken!) / 10n ** 13n)))].sort((a, b) => a - b);
  mkdirSync(join('results', 'faults'), { recursive: true });
  writeFileSync(join('results', 'faults', `${index}.history.json`), JSON.stringify(history));
  await deleteLockIndex(client, index).catch(() => undefined);
  await client.close();
  return { fault, what, grants: grants.length, errors, violations: checkHistory(history, { maxClockSkewMs: 0 }), longestGapMs, primaryTerms };
}

async function main(argv: string[]): Promise<number> {
  const options = parseOptions(argv);
  if (!options) return 0;
  const log = (line: string): void => console.error(`[faults] ${line}`);
  if (process.env.ES_URL) {
    log("skipped: ES_URL is set, and the fault runner kills and pauses nodes, so it runs only on the project's own cluster");
    return 0;
  }
  const nodes = clusterNodes(3);
  await startCluster(3, (line) => log(line));
  const results: RunResult[] = [];
  for (const fault of options.faults) results.push(await runFault(fault, options, nodes, log));
  console.log(`\n${'fault'.padEnd(17)} ${'what happened'.padEnd(44)} grants  longest gap with no grant  primary terms seen  violations`);
  for (const result of results) {
    console.log(
      `${result.fault.padEnd(17)} ${result.what.padEnd(44)} ${String(result.grants).padStart(6)}  ${`${(result.longestGapMs / 1000).toFixed(1)} s`.padStart(25)}  ${result.primaryTerms.join(', ').padEnd(18)}  ${result.violations.length}`,
    );
    const errors = Object.entries(result.errors)
      .sort((a, b) => b[1] - a[1])
      .map(([name, count]) => `${name} ${count}`)
      .join(', ');
    console.log(`    errors: ${errors || 'none'}`);
    for (const violation of result.violations.slice(0, 10)) console.log(`    ${violation.kind}: ${violation.message}`);
  }
  if (options.stopAfter) await stopCluster(nodes.length);
  console.log(`\nhistories: results/faults/${options.stopAfter ? '' : '; the cluster keeps running (npm run cluster:stop)'}`);
  return results.some((result) => result.violations.length > 0) ? 1 : 0;
}

runCli(main);
