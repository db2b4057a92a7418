/**
 * npm run bench:engine — side-by-side throughput in one run, same concurrency for every row.
 * Rows are interleaved over several rounds so that machine noise hits them alike; the ratios are the result.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLockService, deleteLockIndex, ensureLockIndex } from '../functions/store/index.js';
import { describeServer, serverLabel } from '../infra/lib/server-info.js';
import { chooseStore, resolveStore, STORE_FLAG, STORE_RULE } from '../infra/lib/store-target.js';
import { lockDocId } from '../packages/engine/src/keys.js';
import { numberFlag, parseFlags, printHelp } from '../tools/cli/flags.js';
import { runCli } from '../tools/cli/run-cli.js';
import {
  addTotals,
  costsOf,
  describeLatency,
  type FixedRateLatency,
  goalsOf,
  latencyOf,
  type Meters,
  measureSlice,
  noTotals,
  type OneCycleRequests,
  printCostTable,
  printGoals,
  type Row,
  type RowCosts,
  requestsOfOneCycle,
} from './engine-costs.js';
import { ClusterCpuMeter } from './lib/cluster-cpu.js';
import { runAtFixedRate } from './lib/open-loop.js';
import { RequestCounter } from './lib/request-counter.js';
import { type Slices, slicesFromEnv } from './lib/slices.js';
import { cycleOf, measure, rawLockDocument } from './lib/workers.js';
import { operationRequests, printOperationRequests } from './operation-requests.js';
import { seedsTreeRecipe } from './seeds-tree-recipe.js';

const USAGE = `usage: npm run bench:engine [-- --store S] [--verbose]

Lock cycles per second of the engine against the raw requests of its server (ES_URL, OPENSEARCH_URL,
or the project's own node of that product), rows interleaved over rounds, with what each cycle costs:
requests to the cluster, the cluster's CPU (its nodes' process counters), this process's CPU; then each
row's acquire latency with cycles started at half the raw row's capacity. Settings by environment:
BENCH_CONCURRENCY (default 16 workers), BENCH_SECONDS (default 3 per slice), BENCH_ROUNDS (default 6),
BENCH_LATENCY_SECONDS (default 3 per row at the fixed rate).
Writes results/bench/engine.{json,svg} (engine-opensearch.* on OpenSearch), naming the server's version.
  --store S    ${STORE_RULE}
Exit codes: 0 done, 1 failed (e.g. the server unreachable), 2 a usage mistake.`;

/** Workers per row, seconds per slice, rounds: these, or the environment's (read in main). */
let SLICES: Slices = { concurrency: 16, secondsPerSlice: 3, rounds: 6 };
let LATENCY_SECONDS = 3;
/** The fixed-rate phase lets this many cycles per worker of the rounds overlap: a row slower than the rate stops there, and says so. */
const MAX_IN_FLIGHT_PER_WORKER = 4;

async function main(argv: string[]): Promise<number | undefined> {
  const { values } = parseFlags(argv, STORE_FLAG);
  if (printHelp(values, USAGE)) return 0;
  const product = chooseStore(values.store);
  SLICES = slicesFromEnv(SLICES);
  LATENCY_SECONDS = numberFlag('BENCH_LATENCY_SECONDS', process.env.BENCH_LATENCY_SECONDS, { min: 0, exclusiveMin: true }, LATENCY_SECONDS);
  const store = await resolveStore(product, (line) => console.log(`[${product}] ${line}`));
  const client = store.client({ requestTimeoutMs: 30_000 });
  // Figures from two products, or two versions of one, are not comparable: the report names the one measured.
  const server = await describeServer(client);
  console.log(`server: ${serverLabel(server)} at ${store.url}`);
  const raw = server.product === 'Elasticsearch' ? 'raw ES' : `raw ${server.product}`;
  const run = randomBytes(3).toString('hex');
  // One index per row, all with the lock index definition: no row pays for another's segments and merges.
  const indices = ['raw', 'signed', 'unsigned', 'tree', 'recipe', 'rawcond', 'hot', 'spread', 'mix2', 'mix5', 'rawnest'].map((row) => `bench-${row}-${run}`);
  const [rawIndex, signedIndex, unsignedIndex, treeIndex, recipeIndex, rawCondIndex, hotIndex, spreadIndex, mix2Index, mix5Index, rawNestIndex] = indices as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  for (const index of indices) await ensureLockIndex(client, index);
  // The namespace's root as nested document locks find it: marked, no holders.
  const rootId = lockDocId('bench', 'global', '*');
  await client.index({ index: rawNestIndex, id: rootId, document: { ...rawLockDocument(rootId, 0), holders: [], lockedBelow: true }, refresh: true });
  const signingKey = randomBytes(32);
  const signed = createLockService({ client, index: signedIndex, settings: { tokenSigningKey: signingKey } }).service;
  const unsigned = createLockService({ client, index: unsignedIndex }).service;
  const treeEngine = (index: string) => createLockService({ client, index, settings: { tokenSigningKey: signingKey } }).service;
  const tree = treeEngine(treeIndex);
  const hot = treeEngine(hotIndex);
  const spread = treeEngine(spreadIndex);
  const mixed = new Map([
    [0.02, treeEngine(mix2Index)],
    [0.05, treeEngine(mix5Index)],
  ]);
  const recipe = seedsTreeRecipe(client, recipeIndex);

  const directoryLatencies = new Map<string, number[]>([0.02, 0.05].map((share) => [`engine tree, hot top directory, ${share * 100}% directory locks`, []]));
  // Only the interleaved rounds' directory locks are reported: the warm-up's and the fixed-rate phase's would mix other loads in.
  let recordingDirectoryLatencies = false;
  const rows: Row[] = [
    {
      name: `${raw} create + delete (same lock document)`,
      lock: async (worker, i) => {
        const id = `${worker}-${i % 50}`;
        await client.create({ index: rawIndex, id, document: rawLockDocument(id, worker) });
        return async () => {
          await client.delete({ index: rawIndex, id });
        };
      },
    },
    {
      // What the engine asks of Elasticsearch, without the engine: its ids, a create, a conditional delete.
      name: `${raw} create + conditional delete, engine ids`,
      lock: async (worker, i) => {
        const id = lockDocId('bench', 'document', `${worker}-${i % 50}`);
        const created = await client.create({ index: rawCondIndex, id, document: rawLockDocument(id, worker) }, { maxRetries: 0 });
        return async () => {
          await client.delete({ index: rawCondIndex, id, if_seq_no: created._seq_no, if_primary_term: created._primary_term }, { maxRetries: 0 });
        };
      },
    },
    {
      // The same, with what nesting adds: the namespace's root read from the primary in the create's bulk.
      name: `${raw} create with a root read in its bulk + conditional delete, engine ids`,
      lock: async (worker, i) => {
        const id = lockDocId('bench', 'document', `${worker}-${i % 50}`);
        const response = await client.bulk(
          {
            index: rawNestIndex,
            _source: true,
            operations: [{ create: { _id: id } }, rawLockDocument(id, worker), { update: { _id: rootId } }, { doc: {}, detect_noop: true }],
          },
          { maxRetries: 0 },
        );
        const created = response.items[0]!.create!;
        return async () => {
          await client.delete({ index: rawNestIndex, id, if_seq_no: created._seq_no!, if_primary_term: created._primary_term! }, { maxRetries: 0 });
        };
      },
    },
    {
      name: 'engine document acquire + release (signed tokens)',
      lock: async (worker, i) => {
        const grant = await signed.acquire({ namespace: 'bench', granularity: 'document', ids: [`${worker}-${i % 50}`], owner: `w${worker}` });
        return async () => {
          await signed.release({ leaseToken: grant.leaseToken });
        };
      },
    },
    {
      name: 'engine document acquire + release (unsigned tokens)',
      lock: async (worker, i) => {
        const grant = await unsigned.acquire({ namespace: 'bench', granularity: 'document', ids: [`${worker}-${i % 50}`], owner: `w${worker}` });
        return async () => {
          await unsigned.release({ leaseToken: grant.leaseToken });
        };
      },
    },
    {
      name: 'engine tree, distinct files under one hot top directory (depth 3)',
      lock: async (worker, i) => {
        const grant = await hot.acquire({
          namespace: 'bench-hot',
          granularity: 'tree',
          path: `/hot/d${worker % 4}/f${worker}-${i % 50}`,
          owner: `w${worker}`,
          waitMs: 5_000,
        });
        return async () => {
          await hot.release({ leaseToken: grant.leaseToken });
        };
      },
    },
    {
      name: 'engine tree, distinct files in distinct top directories (depth 3)',
      lock: async (worker, i) => {
        const grant = await spread.acquire({
          namespace: 'bench-spread',
          granularity: 'tree',
          path: `/top${worker}/d${i % 4}/f${i % 50}`,
          owner: `w${worker}`,
          waitMs: 5_000,
        });
        return async () => {
          await spread.release({ leaseToken: grant.leaseToken });
        };
      },
    },
    mixedRow(0.02),
    mixedRow(0.05),
    {
      name: 'engine tree acquire + release, depth 4',
      lock: async (worker, i) => {
        const grant = await tree.acquire({
          namespace: 'bench-tree',
          granularity: 'tree',
          path: `/w${worker}/projects/p${i % 5}/file${i % 50}`,
          owner: `w${worker}`,
        });
        return async () => {
          await tree.release({ leaseToken: grant.leaseToken });
        };
      },
    },
    {
      name: "seeds' tree recipe, depth 4 (one ancestor at a time)",
      lock: (worker, i) => recipe.acquire(`/w${worker}/projects/p${i % 5}/file${i % 50}`),
    },
  ];

  /** Files under one hot directory, with a share of the cycles locking one of its subdirectories exclusively (a rename). */
  function mixedRow(share: number): Row {
    const name = `engine tree, hot top directory, ${share * 100}% directory locks`;
    return {
      name,
      lock: async (worker, i) => {
        const directory = Math.random() < share;
        const started = performance.now();
        const path = directory ? `/hot/d${i % 4}` : `/hot/d${worker % 4}/f${worker}-${i % 50}`;
        const engine = mixed.get(share)!;
        const grant = await engine.acquire({ namespace: 'bench-mixed', granularity: 'tree', path, owner: `w${worker}`, waitMs: 10_000 });
        if (directory && recordingDirectoryLatencies) directoryLatencies.get(name)!.push(performance.now() - started);
        return async () => {
          await engine.release({ leaseToken: grant.leaseToken });
        };
      },
    };
  }

  const meterClient = store.client({ requestTimeoutMs: 30_000 });
  const meters: Meters = { requests: new RequestCounter(client), cluster: new ClusterCpuMeter(meterClient) };
  const cycles = new Map(rows.map((row) => [row.name, cycleOf(row.lock)]));

  console.log(`Warming up (${SLICES.concurrency} concurrent workers per row)...`);
  for (const row of rows) await measure(cycles.get(row.name)!, 1, SLICES.concurrency);
  console.log('Counting the requests of one cycle of each row, alone...');
  const oneCycle = new Map<string, OneCycleRequests>();
  for (const row of rows) oneCycle.set(row.name, await requestsOfOneCycle(row.lock, meters.requests));
  console.log('Counting the requests of a renewal, a contended acquire and a claim...');
  const operations = await operationRequests(() => store.client({ requestTimeoutMs: 30_000 }), run, signingKey);
  // This process's CPU per cycle: on this machine the client shares two cores with Elasticsearch,
  // while deployed the engine runs in Lambda and only its requests reach the cluster: there the
  // cluster's CPU per cycle (from its nodes' counters) is what every caller shares.
  const spent = new Map(rows.map((row) => [row.name, noTotals()]));
  recordingDirectoryLatencies = true;
  for (let round = 1; round <= SLICES.rounds; round++) {
    // Every other round runs the rows backwards, so that no row always follows the same neighbour.
    for (const row of round % 2 === 1 ? rows : [...rows].reverse()) {
      process.stdout.write(`round ${round}/${SLICES.rounds}: ${row.name}... `);
      const slice = await measureSlice(cycles.get(row.name)!, SLICES.secondsPerSlice, SLICES.concurrency, meters);
      spent.set(row.name, addTotals(spent.get(row.name)!, slice));
      console.log(
        `${(slice.cycles / SLICES.secondsPerSlice).toFixed(0)} cycles/s, ${(slice.requests / slice.cycles).toFixed(2)} requests/cycle, cluster CPU ${((1_000 * slice.clusterCpuMillis) / slice.cycles).toFixed(0)} µs/cycle`,
      );
    }
  }
  recordingDirectoryLatencies = false;
  const totals = new Map([...spent].map(([name, row]) => [name, row.cycles]));
  const clientCpu = new Map([...spent].map(([name, row]) => [name, row.clientCpuMicros]));
  const seconds = SLICES.rounds * SLICES.secondsPerSlice;
  const rate = (name: string) => totals.get(name)! / seconds;
  const byName = (prefix: string): number => rate(rows.find((row) => row.name.startsWith(prefix))!.name);
  const rawRow = byName(`${raw} create + delete`);
  const fixedRateLatencies = await latenciesAtHalfRawCapacity(rows, rawRow, meters.cluster);
  const rawCond = byName(`${raw} create + conditional`);
  const rawNested = byName(`${raw} create with a root read`);
  const signedRow = byName('engine document acquire + release (signed');
  const unsignedRow = byName('engine document acquire + release (unsigned');
  const hotRow = byName('engine tree, distinct files under one hot');
  const spreadRow = byName('engine tree, distinct files in distinct');
  const treeRow = byName('engine tree acquire + release, depth 4');
  const recipeRow = byName("seeds' tree recipe");
  const cpuPerCycle = (name: string) => clientCpu.get(name)! / totals.get(name)!;

  console.log(
    `\nEngine benchmark on ${serverLabel(server)}: ${SLICES.concurrency} workers, ${SLICES.rounds} interleaved rounds of ${SLICES.secondsPerSlice}s per row\n`,
  );
  const width = Math.max(...rows.map((row) => row.name.length));
  const top = Math.max(...rows.map((row) => rate(row.name)));
  for (const row of rows) {
    const value = rate(row.name);
    console.log(
      `${row.name.padEnd(width)}  ${value.toFixed(0).padStart(6)} cycles/s  ${cpuPerCycle(row.name).toFixed(0).padStart(4)} µs client CPU/cycle  ${'#'.repeat(Math.round((value / top) * 30))}`,
    );
  }
  const ratios = [
    { label: 'engine document (signed) / raw create+delete', value: signedRow / rawRow, target: 0.9 },
    { label: 'engine document (unsigned) / raw create+delete', value: unsignedRow / rawRow },
    { label: 'engine document (signed) / raw create+conditional delete, same ids', value: signedRow / rawCond },
    { label: 'raw with the root read (nesting) / raw create+conditional delete', value: rawNested / rawCond, target: 0.95 },
    { label: 'engine document (signed) / raw with the root read, same requests', value: signedRow / rawNested },
    { label: "engine tree depth 4 / seeds' recipe depth 4", value: treeRow / recipeRow, target: 3 },
    { label: 'tree files under one hot directory / document (signed)', value: hotRow / signedRow, target: 0.7 },
    { label: 'tree files in distinct top directories / document (signed)', value: spreadRow / signedRow, target: 0.7 },
    { label: 'tree files under one hot directory / in distinct ones', value: hotRow / spreadRow, target: 0.85 },
    ...[...directoryLatencies.keys()].map((name) => ({ label: `${name.replace('engine tree, ', '')} / document (signed)`, value: rate(name) / signedRow })),
  ];
  console.log('');
  for (const ratio of ratios) {
    const verdict =
      ratio.target === undefined ? '' : ratio.value >= ratio.target ? `  (target >= ${ratio.target}: met)` : `  (target >= ${ratio.target}: NOT met)`;
    console.log(`${ratio.label.padEnd(68)} ${ratio.value.toFixed(2)}${verdict}`);
  }
  console.log('');
  for (const [name, latencies] of directoryLatencies) {
    const sorted = [...latencies].sort((a, b) => a - b);
    const at = (q: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
    console.log(
      `${`directory-lock acquire latency, ${name.replace('engine tree, ', '')}`.padEnd(68)} p50 ${at(0.5).toFixed(0)} ms, p95 ${at(0.95).toFixed(0)} ms, max ${at(1).toFixed(0)} ms (${sorted.length} locks)`,
    );
  }
  const costs = rows.map((row) => costsOf(row.name, spent.get(row.name)!, seconds, oneCycle.get(row.name)!, fixedRateLatencies.get(row.name)!));
  const costsOfRow = (prefix: string): RowCosts => costs.find((row) => row.name.startsWith(prefix))!;
  const rawCosts = costsOfRow(`${raw} create + delete`);
  console.log('');
  printCostTable(costs, rawCosts);
  const goals = goalsOf({
    raw: rawCosts,
    rawConditional: costsOfRow(`${raw} create + conditional`),
    rawWithRootRead: costsOfRow(`${raw} create with a root read`),
    document: costsOfRow('engine document acquire + release (signed'),
  });
  console.log('');
  printGoals(goals);
  console.log('');
  printOperationRequests(operations);
  const outDir = join('results', 'bench');
  mkdirSync(outDir, { recursive: true });
  // Elasticsearch keeps the files' old names; another product's run sits beside them, not over them.
  const stem = product === 'elasticsearch' ? 'engine' : `engine-${product}`;
  writeFileSync(
    join(outDir, `${stem}.svg`),
    barChart(
      rows.map((row) => ({ label: row.name, value: rate(row.name) })),
      serverLabel(server),
    ),
  );
  writeFileSync(
    join(outDir, `${stem}.json`),
    JSON.stringify(
      {
        server: { ...server, url: store.url },
        concurrency: SLICES.concurrency,
        seconds,
        rows: costs,
        ratios,
        goals,
        operations,
        directoryLatencies: Object.fromEntries(directoryLatencies),
      },
      null,
      2,
    ),
  );
  console.log(`\nchart: ${join(outDir, `${stem}.svg`)}`);

  for (const index of indices) await deleteLockIndex(client, index);
  await client.close();
  await meterClient.close();
  await store.stop();
  return undefined;
}

/** Each row's cycles started at half the raw row's capacity, from this run: the latency a caller sees at a moderate load. */
async function latenciesAtHalfRawCapacity(rows: readonly Row[], rawCyclesPerSecond: number, cluster: ClusterCpuMeter): Promise<Map<string, FixedRateLatency>> {
  const rate = rawCyclesPerSecond / 2;
  const latencies = new Map<string, FixedRateLatency>();
  for (const row of rows) {
    process.stdout.write(`at ${rate.toFixed(0)} cycles/s for ${LATENCY_SECONDS} s: ${row.name}... `);
    const clusterBefore = await cluster.totalMillis();
    const clientBefore = process.cpuUsage();
    const outcome = await runAtFixedRate(row.lock, rate, LATENCY_SECONDS, MAX_IN_FLIGHT_PER_WORKER * SLICES.concurrency);
    const client = process.cpuUsage(clientBefore);
    const cpu = { clusterCpuMillis: (await cluster.totalMillis()) - clusterBefore, clientCpuMicros: client.user + client.system };
    const latency = latencyOf(outcome, rate, cpu);
    latencies.set(row.name, latency);
    console.log(describeLatency(latency));
  }
  return latencies;
}

function barChart(bars: Array<{ label: string; value: number }>, server: string): string {
  const max = Math.max(...bars.map((bar) => bar.value));
  const rowHeight = 34;
  const labelWidth = 390;
  const plotWidth = 360;
  const height = bars.length * rowHeight + 50;
  const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/'/g, '&#39;');
  const rows = bars
    .map((bar, index) => {
      const y = 40 + index * rowHeight;
      const width = Math.max(1, (bar.value / max) * plotWidth);
      return `<text x="${labelWidth - 8}" y="${y + 17}" text-anchor="end">${escapeXml(bar.label)}</text><rect x="${labelWidth}" y="${y + 4}" width="${width.toFixed(1)}" height="20" fill="#3b7dd8"/><text x="${labelWidth + width + 6}" y="${y + 18}">${bar.value.toFixed(0)}/s</text>`;
    })
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + plotWidth + 80}" height="${height}" font-family="sans-serif" font-size="13"><text x="10" y="22" font-weight="bold">Lock cycles per second on ${escapeXml(server)} (${SLICES.concurrency} concurrent workers)</text>${rows}</svg>\n`;
}

runCli(main);
