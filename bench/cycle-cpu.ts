/**
 * tsx bench/cycle-cpu.ts — this process's CPU per document lock cycle: the engine's exclusive
 * document acquire + release (signed tokens) against the raw requests it stands for, side by side.
 *
 * Rows, each on a lock index of its own (ES_URL, or the project's own node):
 * - raw create + delete: the cheapest cycle Elasticsearch offers.
 * - raw, the engine's requests: what one engine cycle sends, without the engine: a `_bulk` with the
 *   create and a primary read of the namespace's root, then a conditional delete on the incarnation.
 * - engine: `LockService.acquire` + `release`, signed tokens.
 * Rows are interleaved over rounds (alternating order) so that the machine's noise hits them alike,
 * once with one worker (sequential cycles) and once with 16 concurrent ones.
 *
 * `--offline`: the engine and the same raw requests against an in-memory primary instead
 * (stub-search-client.ts): the engine and store's own CPU, without the client's transport, the
 * network, or Elasticsearch competing for the cores. Quieter: for comparing changes to the engine.
 * `--baseline <dir>[,<dir>...]`: adds a row for the engine of each other copy of functions/ (the code
 * before a change: `git archive <commit> functions infra/index | tar -x -C .cache/before`), interleaved with the others.
 * `--profile`: afterwards, each row runs alone under the V8 sampling profiler; the profiles go to
 * results/bench/cycle-cpu-<row>.cpuprofile and their top self-time functions are printed, by area,
 * by function, and charged to the innermost engine function on the stack. (The profiler samples a
 * busy thread by wall clock: time the process spends preempted inside a syscall, such as a socket
 * write that wakes Elasticsearch on a shared core, shows up as that syscall.)
 * `--summarise <file.cpuprofile>`: only prints that summary (for a profile from `node --cpu-prof`).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createElasticsearchClient, createLockService, deleteLockIndex, ensureLockIndex, lockIndexIncarnation } from '../functions/store/index.js';
import type { SearchClient } from '../functions/store/search-client.js';
import { resolveElasticsearch } from '../infra/es/target.js';
import { lockDocId } from '../packages/engine/src/keys.js';
import type { LockService } from '../packages/engine/src/service.js';
import { numberFlag, parseFlags, printHelp, UsageError } from '../tools/cli/flags.js';
import { runCli } from '../tools/cli/run-cli.js';
import { type Cycle, measure, rawLockDocument } from './lib/workers.js';
import { stubSearchClient } from './stub-search-client.js';

const USAGE = `usage: tsx bench/cycle-cpu.ts [--offline] [--baseline <dir>[,<dir>...]] [--profile] [--summarise <file.cpuprofile>] [--verbose]

Client CPU per document lock cycle, engine against the raw requests. Settings by environment:
CYCLE_SECONDS (default 2 per slice), CYCLE_ROUNDS (default 6), CYCLE_CONCURRENCY (default 16),
CYCLE_PROFILE_SECONDS (default 8 per profiled row). Exit codes: 0 done, 1 failed, 2 a usage mistake.`;

interface Row {
  name: string;
  slug: string;
  cycle: Cycle;
}

async function main(argv: string[]): Promise<number | undefined> {
  const { values } = parseFlags(argv, {
    profile: { type: 'boolean' },
    offline: { type: 'boolean' },
    baseline: { type: 'string' },
    summarise: { type: 'string' },
  });
  if (printHelp(values, USAGE)) return 0;
  if (typeof values.summarise === 'string') {
    printSummary(values.summarise, JSON.parse(readFileSync(values.summarise, 'utf8')) as CpuProfile);
    return 0;
  }
  const seconds = numberFlag('CYCLE_SECONDS', process.env.CYCLE_SECONDS, { min: 0, exclusiveMin: true }, 2);
  const rounds = numberFlag('CYCLE_ROUNDS', process.env.CYCLE_ROUNDS, { integer: true, min: 1 }, 6);
  const concurrency = numberFlag('CYCLE_CONCURRENCY', process.env.CYCLE_CONCURRENCY, { integer: true, min: 1 }, 16);
  const profileSeconds = numberFlag('CYCLE_PROFILE_SECONDS', process.env.CYCLE_PROFILE_SECONDS, { min: 0, exclusiveMin: true }, 8);

  const baselines: Baseline[] = [];
  for (const directory of typeof values.baseline === 'string' ? values.baseline.split(',') : []) baselines.push(await loadBaseline(directory));

  if (values.offline) {
    await measureOffline(seconds, rounds, concurrency, profileSeconds, values.profile === true, baselines);
    return undefined;
  }

  const es = await resolveElasticsearch((line) => console.log(`[es] ${line}`));
  const client: SearchClient = createElasticsearchClient({ url: es.url, ...(es.apiKey ? { apiKey: es.apiKey } : {}), requestTimeoutMs: 30_000 });
  const runId = randomBytes(3).toString('hex');
  const [rawIndex, sameIndex, engineIndex] = ['raw', 'same', 'engine'].map((row) => `cycle-cpu-${row}-${runId}`) as [string, string, string];
  const baselineIndices = baselines.map((_, position) => `cycle-cpu-baseline${position}-${runId}`);
  const indices = [rawIndex, sameIndex, engineIndex, ...baselineIndices];
  for (const index of indices) await ensureLockIndex(client, index);
  const sameIncarnation = (await lockIndexIncarnation(client, sameIndex))!;
  await client.index({ index: sameIndex, id: ROOT_ID, routing: 'bench', document: markedRoot(), refresh: true });
  const engine = createLockService({ client, index: engineIndex, settings: { tokenSigningKey: randomBytes(32) } }).service;
  const sameCycle = sameRequestsCycle(client, sameIndex, sameIncarnation);
  const stubEngine = createLockService({ client: stubSearchClient('cycle-cpu-stub'), index: 'cycle-cpu-stub', settings: { tokenSigningKey: randomBytes(32) } });
  const stubEngineCycle = engineCycle(stubEngine.service);

  const rows: Row[] = [
    {
      name: 'raw create + delete',
      slug: 'raw',
      cycle: async (worker, i) => {
        const id = `${worker}-${i % 50}`;
        await client.create({ index: rawIndex, id, document: rawLockDocument(id, worker) });
        await client.delete({ index: rawIndex, id });
      },
    },
    { name: "raw, the engine's requests", slug: 'same', cycle: sameCycle },
    {
      // The control: the engine's own work done beside the raw requests, against an in-memory primary.
      // Against the engine row, it tells the engine's code apart from how the engine uses the client.
      name: 'raw requests + engine on a stub',
      slug: 'control',
      cycle: async (worker, i) => {
        await sameCycle(worker, i);
        await stubEngineCycle(worker, i);
      },
    },
    {
      // The same with a second stub cycle right after the first: the first runs just after the
      // requests' I/O (cold caches, as the engine's own work does), the second warm. The difference
      // between the two control rows is the engine's work warm; the first control row minus the raw
      // row is that work cold.
      name: 'raw requests + engine on a stub twice',
      slug: 'control2',
      cycle: async (worker, i) => {
        await sameCycle(worker, i);
        await stubEngineCycle(worker, i);
        await stubEngineCycle(worker, i + 1);
      },
    },
    ...baselines.map((baseline, position) => ({
      name: `engine of ${baseline.name}`,
      slug: `baseline${position}`,
      cycle: engineCycle(baseline.engine(client, baselineIndices[position]!)),
    })),
    { name: 'engine acquire + release (signed)', slug: 'engine', cycle: engineCycle(engine) },
  ];

  const modes = [
    { label: 'sequential (1 worker)', workers: 1 },
    { label: `${concurrency} concurrent workers`, workers: concurrency },
  ];
  console.log('Warming up...');
  for (const mode of modes) for (const row of rows) await measure(row.cycle, 1, mode.workers);
  for (const mode of modes) {
    const perCycle = await compare(rows, mode.label, mode.workers, seconds, rounds);
    const at = (slug: string) => perCycle.get(slug)!;
    console.log(
      `  the engine's work on a stub, between the requests: ${(at('control') - at('same')).toFixed(1)} µs cold (right after their I/O), ${(at('control2') - at('control')).toFixed(1)} µs warm (right after itself)`,
    );
  }
  if (values.profile) await profileRows(rows, concurrency, profileSeconds);

  for (const index of indices) await deleteLockIndex(client, index);
  await client.close();
  await es.stop();
  return undefined;
}

/** The same rows against an in-memory primary (stub-search-client.ts): the engine and store's own CPU, without transport or network. */
async function measureOffline(
  seconds: number,
  rounds: number,
  concurrency: number,
  profileSeconds: number,
  profile: boolean,
  baselines: Baseline[],
): Promise<void> {
  const sameClient = stubSearchClient('cycle-cpu-same');
  await sameClient.index({ index: 'cycle-cpu-same', id: ROOT_ID, document: markedRoot() });
  const engineClient = stubSearchClient('cycle-cpu-engine');
  const engine = createLockService({ client: engineClient, index: 'cycle-cpu-engine', settings: { tokenSigningKey: randomBytes(32) } }).service;
  const rows: Row[] = [
    { name: "stub: raw, the engine's requests", slug: 'stub-same', cycle: sameRequestsCycle(sameClient, 'cycle-cpu-same', sameClient.incarnation) },
    ...baselines.map((baseline, position) => ({
      name: `stub: engine of ${baseline.name}`,
      slug: `stub-baseline${position}`,
      cycle: engineCycle(baseline.engine(stubSearchClient('cycle-cpu-baseline'), 'cycle-cpu-baseline')),
    })),
    { name: 'stub: engine acquire + release', slug: 'stub-engine', cycle: engineCycle(engine) },
  ];
  console.log('Warming up...');
  for (const row of rows) await measure(row.cycle, 1, 1);
  await compare(rows, 'in-memory primary, sequential', 1, seconds, rounds);
  await compare(rows, `in-memory primary, ${concurrency} concurrent workers`, concurrency, seconds, rounds);
  if (profile) await profileRows(rows, 1, profileSeconds);
}

/** What one engine cycle sends, without the engine: a create with a primary read of the root in one _bulk, then a conditional delete (routed by namespace). */
function sameRequestsCycle(client: SearchClient, index: string, incarnation: string): Cycle {
  return async (worker, i) => {
    const id = lockDocId('bench', 'document', `${worker}-${i % 50}`);
    const response = await client.bulk(
      {
        index,
        operations: [
          { create: { _id: id, routing: 'bench' } },
          rawLockDocument(id, worker),
          { update: { _id: ROOT_ID, routing: 'bench' } },
          { doc: {}, detect_noop: true },
        ],
        require_alias: true,
        _source: true,
      },
      { maxRetries: 0 },
    );
    const created = response.items[0]!.create!;
    await client.delete({ index: incarnation, id, routing: 'bench', if_seq_no: created._seq_no!, if_primary_term: created._primary_term! }, { maxRetries: 0 });
  };
}

/** Another copy of functions/ (the code before a change): its folder's name, and how it builds an engine over a client and index. */
interface Baseline {
  name: string;
  engine: (client: SearchClient, index: string) => Pick<LockService, 'acquire' | 'release'>;
}

/**
 * The engine of a copy of the project's functions/ folder, e.g. the last commit's:
 * `git archive HEAD functions infra/index | tar -x -C .cache/before` (inside the project, so that its imports find node_modules).
 */
async function loadBaseline(directory: string): Promise<Baseline> {
  const entry = pathToFileURL(resolve(directory, 'functions/store/index.ts')).href;
  if (!existsSync(fileURLToPath(entry))) throw new UsageError(`--baseline: no functions/store/index.ts in ${directory}`);
  const module = (await import(entry)) as typeof import('../functions/store/index.js');
  return {
    name: basename(resolve(directory)),
    engine: (client, index) => module.createLockService({ client, index, settings: { tokenSigningKey: randomBytes(32) } }).service,
  };
}

function engineCycle(engine: Pick<LockService, 'acquire' | 'release'>): Cycle {
  return async (worker, i) => {
    const grant = await engine.acquire({ namespace: 'bench', granularity: 'document', ids: [`${worker}-${i % 50}`], owner: `w${worker}` });
    const released = await engine.release({ leaseToken: grant.leaseToken });
    if (released.outcome !== 'released') throw new Error(`release answered ${released.outcome}`);
  };
}

/** Interleaved rounds (alternating order); prints each row's CPU per cycle and the last row's against the others. */
async function compare(rows: Row[], label: string, workers: number, seconds: number, rounds: number): Promise<Map<string, number>> {
  const cycles = new Map(rows.map((row) => [row.slug, 0]));
  const cpu = new Map(rows.map((row) => [row.slug, 0]));
  const perRound = new Map<string, number[]>(rows.map((row) => [row.slug, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const row of round % 2 === 1 ? rows : [...rows].reverse()) {
      const before = process.cpuUsage();
      const completed = await measure(row.cycle, seconds, workers);
      const used = process.cpuUsage(before);
      cycles.set(row.slug, cycles.get(row.slug)! + completed);
      cpu.set(row.slug, cpu.get(row.slug)! + used.user + used.system);
      perRound.get(row.slug)!.push((used.user + used.system) / completed);
    }
  }
  const perCycle = (slug: string) => cpu.get(slug)! / cycles.get(slug)!;
  console.log(`\n${label}, ${rounds} interleaved rounds of ${seconds} s per row:`);
  for (const row of rows) {
    const sorted = [...perRound.get(row.slug)!].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    console.log(
      `  ${row.name.padEnd(34)} ${(cycles.get(row.slug)! / (rounds * seconds)).toFixed(0).padStart(6)} cycles/s  ${perCycle(row.slug).toFixed(1).padStart(6)} µs CPU/cycle  (rounds: median ${median.toFixed(1)}, ${sorted[0]!.toFixed(1)}-${sorted.at(-1)!.toFixed(1)})`,
    );
  }
  const last = rows.at(-1)!;
  for (const row of rows.slice(0, -1)) {
    const extra = perCycle(last.slug) - perCycle(row.slug);
    console.log(`  ${last.name} / ${row.name}: ${(perCycle(last.slug) / perCycle(row.slug)).toFixed(2)}x CPU (${extra >= 0 ? '+' : ''}${extra.toFixed(1)} µs)`);
  }
  return new Map(rows.map((row) => [row.slug, perCycle(row.slug)]));
}

/** Each row alone under the V8 sampling profiler (100 µs interval); writes results/bench/cycle-cpu-<slug>.cpuprofile and prints its summary. */
async function profileRows(rows: Row[], workers: number, seconds: number): Promise<void> {
  const outDir = join('results', 'bench');
  mkdirSync(outDir, { recursive: true });
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  // 100 µs between samples (the default is 1 ms): a cycle takes a few hundred µs of CPU.
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  for (const row of rows) {
    await session.post('Profiler.start');
    const completed = await measure(row.cycle, seconds, workers);
    const { profile } = await session.post('Profiler.stop');
    const file = join(outDir, `cycle-cpu-${row.slug}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    printSummary(`${row.name}, ${workers} worker${workers === 1 ? '' : 's'} (${file})`, profile as CpuProfile, completed);
  }
  session.disconnect();
}

const ROOT_ID = lockDocId('bench', 'global', '*');

/** The namespace's root as document locks find it once the first of them has marked it: no holders, lockedBelow. */
const markedRoot = () => ({ ...rawLockDocument(ROOT_ID, 0), holders: [], lockedBelow: true });

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

/** Where a function lives: a project file, a package, Node.js itself, or V8's own buckets ((garbage collector), (program)). */
function areaOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch) return packageMatch[1]!;
  if (url.startsWith('node:')) return 'node: internals';
  const project = /\/(functions|bench|infra)\/(.*)$/.exec(url);
  return project ? `${project[1]}/${project[2]}` : url;
}

/** Self time per function and per area, idle left out; per cycle when the cycle count is known. */
function printSummary(title: string, profile: CpuProfile, cycles?: number): void {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, index) => {
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const nameOf = (id: number): string => {
    const { functionName, url, lineNumber, columnNumber } = byId.get(id)!.callFrame;
    return `${functionName || '(anonymous)'}  ${areaOf(url, functionName)}${url ? `:${lineNumber + 1}:${columnNumber + 1}` : ''}`;
  };
  // The innermost project function on the stack (functions/): what asked for the work (a crypto call, the client's serialisation).
  const projectCaller = (id: number): string => {
    for (let current: number | undefined = id; current !== undefined; current = parentOf.get(current)) {
      if (/\/functions\//.test(byId.get(current)!.callFrame.url)) return nameOf(current);
    }
    return '(not under functions/)';
  };
  const functions = new Map<string, number>();
  const areas = new Map<string, number>();
  const callers = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of selfMicros) {
    const { functionName, url } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    busy += micros;
    const area = areaOf(url, functionName);
    const name = nameOf(id);
    functions.set(name, (functions.get(name) ?? 0) + micros);
    areas.set(area, (areas.get(area) ?? 0) + micros);
    const caller = projectCaller(id);
    callers.set(caller, (callers.get(caller) ?? 0) + micros);
  }
  const unit = cycles ? cycles : 1;
  const show = (micros: number) =>
    `${(micros / unit).toFixed(1).padStart(7)} ${cycles ? 'µs/cycle' : 'µs'}  ${((100 * micros) / busy).toFixed(1).padStart(5)}%`;
  console.log(`\n${title}: ${cycles ? `${cycles} cycles, ` : ''}${(busy / unit).toFixed(0)} ${cycles ? 'µs/cycle' : 'µs'} busy in samples`);
  console.log('  by area (self time):');
  for (const [area, micros] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`    ${show(micros)}  ${area}`);
  console.log('  top functions (self time):');
  for (const [name, micros] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`    ${show(micros)}  ${name}`);
  console.log('  charged to the innermost project function on the stack (its own time and what it called outside functions/):');
  for (const [name, micros] of [...callers].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`    ${show(micros)}  ${name}`);
}

runCli((argv) => {
  if (argv.includes('--summarise') && argv.includes('--profile'))
    throw new UsageError('--summarise reads a profile; --profile makes new ones: give one of them');
  return main(argv);
});
