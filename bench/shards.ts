/**
 * npm run bench:shards — lock cycles per second over many namespaces on a lock index of one primary
 * shard against one of several (index:create --shards N), side by side in one run, on the project's
 * multi-node cluster. Rows are interleaved over several rounds so that machine noise hits them alike;
 * the ratios are the result.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLockService, deleteLockIndex, ensureLockIndex, lockIndexIncarnation, routingOf } from '../functions/store/index.js';
import type { SearchClient } from '../functions/store/search-client.js';
import { clusterNodes } from '../infra/es/cluster.js';
import { describeServer, serverLabel } from '../infra/lib/server-info.js';
import {
  chooseStore,
  givenStore,
  STORE_FLAG,
  STORE_RULE,
  type StoreEndpoint,
  storeAt,
  storeDistribution,
  storeUrlVariable,
} from '../infra/lib/store-target.js';
import { lockDocId } from '../packages/engine/src/keys.js';
import { numberFlag, parseFlags, printHelp } from '../tools/cli/flags.js';
import { runCli } from '../tools/cli/run-cli.js';
import { ServiceError } from '../tools/cli/service-errors.js';
import { type Slices, slicesFromEnv } from './lib/slices.js';
import { type Cycle, measure, rawLockDocument } from './lib/workers.js';

const USAGE = `usage: npm run bench:shards [-- --store S] [--shards N] [--namespaces K] [--verbose]

Document lock cycles per second spread over many namespaces, on a lock index of 1 primary shard and on
one of N (requests routed by namespace), rows interleaved over rounds. The server: ES_URL (or
OPENSEARCH_URL with --store opensearch), else the project's 3-node cluster of that product, which must
be running (npm run cluster:start, or opensearch-cluster:start; stop it after with cluster:stop).
Settings by environment: BENCH_CONCURRENCY (default 24 workers), BENCH_SECONDS (default 3 per slice),
BENCH_ROUNDS (default 6). Writes results/bench/shards.json (shards-opensearch.json on OpenSearch).
  --store S         ${STORE_RULE}
  --shards N        primary shards of the second lock index, 2 to 64 (default 3)
  --namespaces K    namespaces the cycles spread over, 1 to 10000 (default 64)
Exit codes: 0 done, 1 failed (e.g. the server unreachable), 2 a usage mistake.`;

/** Workers per row, seconds per slice, rounds: these, or the environment's (read in main). */
let SLICES: Slices = { concurrency: 24, secondsPerSlice: 3, rounds: 6 };
const CLUSTER_NODES = 3;

/** ES_URL / OPENSEARCH_URL when set, else the project's cluster of that product (checked: it must run). */
async function clusterTarget(product: 'elasticsearch' | 'opensearch'): Promise<StoreEndpoint> {
  const given = givenStore(product);
  if (given) {
    await given.check();
    return given;
  }
  const nodes = clusterNodes(CLUSTER_NODES, undefined, storeDistribution(product));
  const url = nodes.map((node) => node.url).join(',');
  const endpoint = storeAt(product, url);
  try {
    await endpoint.check();
  } catch (error) {
    const start = product === 'elasticsearch' ? 'cluster:start' : 'opensearch-cluster:start';
    throw new ServiceError(
      {
        headline: `the project's ${storeDistribution(product).product} cluster does not answer`,
        tried: url,
        failed: (error as Error).message.split('\n')[0]!,
        fix: [`npm run ${start} (and npm run ${start.replace('start', 'stop')} after)`, `or ${storeUrlVariable(product)}=<a cluster's nodes>`],
      },
      { cause: error },
    );
  }
  return endpoint;
}

/** How the primaries of the lock index behind `alias` spread over the nodes. */
async function primariesOf(client: SearchClient, alias: string): Promise<string> {
  const index = (await lockIndexIncarnation(client, alias))!;
  const copies = (await client.searchShards({ index })).shards.flat();
  const primaries = copies.filter((copy) => copy.primary);
  const nodes = new Set(primaries.map((copy) => copy.node));
  return `${primaries.length} primar${primaries.length === 1 ? 'y' : 'ies'} on ${nodes.size} node${nodes.size === 1 ? '' : 's'}, ${copies.length} copies in all`;
}

async function main(argv: string[]): Promise<number | undefined> {
  const { values } = parseFlags(argv, { ...STORE_FLAG, shards: { type: 'string' }, namespaces: { type: 'string' } });
  if (printHelp(values, USAGE)) return 0;
  const product = chooseStore(values.store);
  const shards = numberFlag('--shards', values.shards as string | undefined, { integer: true, min: 2, max: 64 }, 3);
  const namespaces = numberFlag('--namespaces', values.namespaces as string | undefined, { integer: true, min: 1, max: 10_000 }, 64);
  SLICES = slicesFromEnv(SLICES);
  const target = await clusterTarget(product);
  const client = target.client({ requestTimeoutMs: 30_000 });
  const server = await describeServer(client);
  const health = await client.cluster.health({});
  console.log(`server: ${serverLabel(server)} at ${target.url} (${health.number_of_data_nodes} data nodes)`);
  const raw = server.product === 'Elasticsearch' ? 'raw ES' : `raw ${server.product}`;
  const run = randomBytes(3).toString('hex');

  // One lock index per row (the lock index definition, as index:create makes it): no row pays for another's segments and merges.
  const layouts = [1, shards];
  const engineIndex = new Map(layouts.map((count) => [count, `bench-shards-engine-${count}-${run}`]));
  const rawIndex = new Map(layouts.map((count) => [count, `bench-shards-raw-${count}-${run}`]));
  const indices = [...engineIndex.values(), ...rawIndex.values()];
  for (const count of layouts) {
    await ensureLockIndex(client, engineIndex.get(count)!, { shards: count });
    await ensureLockIndex(client, rawIndex.get(count)!, { shards: count });
  }
  await client.cluster.health({ index: indices, wait_for_status: 'green', timeout: '60s' });
  const placement = new Map<number, string>();
  for (const count of layouts) placement.set(count, await primariesOf(client, engineIndex.get(count)!));

  const signingKey = randomBytes(32);
  const engines = new Map(
    layouts.map((count) => [count, createLockService({ client, index: engineIndex.get(count)!, settings: { tokenSigningKey: signingKey } }).service]),
  );
  // Worker w's i-th cycle locks one of its own ids in one of K namespaces: no two workers contend, and the namespaces take turns.
  const namespaceOf = (worker: number, iteration: number): string => `ns${(worker * 7 + iteration) % namespaces}`;
  const label = (count: number) => `${count} shard${count === 1 ? '' : 's'}`;
  const rows: Array<{ name: string; layout: number; kind: 'engine' | 'raw'; cycle: Cycle }> = layouts.flatMap((count) => [
    {
      name: `engine document acquire + release (signed), ${label(count)}`,
      layout: count,
      kind: 'engine' as const,
      cycle: async (worker: number, i: number) => {
        const engine = engines.get(count)!;
        const grant = await engine.acquire({ namespace: namespaceOf(worker, i), granularity: 'document', ids: [`${worker}-${i % 50}`], owner: `w${worker}` });
        await engine.release({ leaseToken: grant.leaseToken });
      },
    },
    {
      // What Elasticsearch does for those cycles without the engine: the same ids and routing, a create and a conditional delete.
      name: `${raw} create + conditional delete, routed, ${label(count)}`,
      layout: count,
      kind: 'raw' as const,
      cycle: async (worker: number, i: number) => {
        const index = rawIndex.get(count)!;
        const id = lockDocId(namespaceOf(worker, i), 'document', `${worker}-${i % 50}`);
        const routing = routingOf(id);
        const created = await client.create({ index, id, routing, document: rawLockDocument(id, worker), require_alias: true }, { maxRetries: 0 });
        await client.delete({ index, id, routing, if_seq_no: created._seq_no, if_primary_term: created._primary_term }, { maxRetries: 0 });
      },
    },
  ]);

  for (const count of layouts) console.log(`lock index of ${label(count)}: ${placement.get(count)}`);
  console.log(`Warming up (${SLICES.concurrency} concurrent workers per row, ${namespaces} namespaces)...`);
  for (const row of rows) await measure(row.cycle, 1, SLICES.concurrency);
  const totals = new Map(rows.map((row) => [row.name, 0]));
  const perRound = new Map(rows.map((row) => [row.name, [] as number[]]));
  for (let round = 1; round <= SLICES.rounds; round++) {
    // Every other round runs the rows backwards, so that no row always follows the same neighbour.
    for (const row of round % 2 === 1 ? rows : [...rows].reverse()) {
      process.stdout.write(`round ${round}/${SLICES.rounds}: ${row.name}... `);
      const completed = await measure(row.cycle, SLICES.secondsPerSlice, SLICES.concurrency);
      totals.set(row.name, totals.get(row.name)! + completed);
      perRound.get(row.name)!.push(completed / SLICES.secondsPerSlice);
      console.log(`${(completed / SLICES.secondsPerSlice).toFixed(0)} cycles/s`);
    }
  }
  const seconds = SLICES.rounds * SLICES.secondsPerSlice;
  const rate = (name: string) => totals.get(name)! / seconds;
  const rowOf = (kind: 'engine' | 'raw', layout: number) => rows.find((row) => row.kind === kind && row.layout === layout)!;

  console.log(
    `\nShards benchmark on ${serverLabel(server)}, ${health.number_of_data_nodes} data nodes: ${SLICES.concurrency} workers over ${namespaces} namespaces, ${SLICES.rounds} interleaved rounds of ${SLICES.secondsPerSlice}s per row\n`,
  );
  const width = Math.max(...rows.map((row) => row.name.length));
  for (const row of rows) {
    const rounds = perRound.get(row.name)!;
    console.log(
      `${row.name.padEnd(width)}  ${rate(row.name).toFixed(0).padStart(6)} cycles/s  (rounds ${Math.min(...rounds).toFixed(0)}-${Math.max(...rounds).toFixed(0)})`,
    );
  }
  console.log('');
  console.log(`${'kind'.padEnd(44)} ${label(1).padStart(9)} ${label(shards).padStart(9)}   ratio`);
  const ratios = (['engine', 'raw'] as const).map((kind) => {
    const one = rate(rowOf(kind, 1).name);
    const many = rate(rowOf(kind, shards).name);
    const name = kind === 'engine' ? 'engine document acquire + release (signed)' : `${raw} create + conditional delete, routed`;
    console.log(`${name.padEnd(44)} ${one.toFixed(0).padStart(9)} ${many.toFixed(0).padStart(9)}   ${(many / one).toFixed(2)}`);
    // The same ratio round by round (rows of a round ran back to back): how much of it is noise.
    const byRound = perRound.get(rowOf(kind, shards).name)!.map((value, at) => value / perRound.get(rowOf(kind, 1).name)![at]!);
    return { kind, name, oneShard: one, shards, manyShards: many, ratio: many / one, ratioByRound: byRound };
  });
  for (const ratio of ratios) {
    console.log(`  ${ratio.kind} ratio by round: ${ratio.ratioByRound.map((value) => value.toFixed(2)).join(' ')}`);
  }

  const outDir = join('results', 'bench');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, product === 'elasticsearch' ? 'shards.json' : `shards-${product}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        server: { ...server, url: target.url, dataNodes: health.number_of_data_nodes },
        concurrency: SLICES.concurrency,
        namespaces,
        seconds,
        placement: Object.fromEntries(placement),
        rows: rows.map((row) => ({ name: row.name, shards: row.layout, cyclesPerSecond: rate(row.name), byRound: perRound.get(row.name) })),
        ratios,
      },
      null,
      2,
    ),
  );
  console.log(`\nresults: ${file}`);

  for (const index of indices) await deleteLockIndex(client, index);
  await client.close();
  return undefined;
}

runCli(main);
