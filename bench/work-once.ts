/**
 * npm run bench:work — what work that runs once and fenced writes cost, side by side in one run.
 * A, per call: a plain lock cycle (acquire + release of one document lock) against a cycle with a
 * completion record (acquireWork + release recording `completed`) and a repeat (acquireWork of a
 * completed key: the recorded answer). B, per write: fencedIndex against a plain `index` of the same
 * document, fencedUpdate (realtime GET + versioned PUT) against a plain partial `update`.
 * One caller, calls back to back (a Lambda's view: latency per call), variants interleaved slice by
 * slice over rounds (alternating order) so that machine noise hits them alike. Requests are counted
 * exactly with the clients' diagnostic events; a round trip is a wave of requests in flight together.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@elastic/elasticsearch';
import { createElasticsearchClient } from '../functions/store/client.js';
import { createLockService, deleteLockIndex, ensureLockIndex } from '../functions/store/index.js';
import type { SearchClient } from '../functions/store/search-client.js';
import { describeServer, serverLabel } from '../infra/lib/server-info.js';
import { resolveStore } from '../infra/lib/store-target.js';
import { fencedIndex, fencedUpdate } from '../packages/client/src/fenced-writes.js';
import type { CompletedWork, Grant } from '../packages/engine/src/model.js';
import { numberFlag, parseFlags, printHelp } from '../tools/cli/flags.js';
import { runCli } from '../tools/cli/run-cli.js';

const USAGE = `usage: npm run bench:work

Per call: plain lock cycle vs cycle with a completion record vs repeat of a completed key; per write:
fencedIndex vs index, fencedUpdate vs update. Elasticsearch requests, round trips, latency p50/p95
and the ratios, one caller, variants interleaved over rounds, on ES_URL (with ES_API_KEY) or the
project's own node. Settings by environment: BENCH_ROUNDS (default 10), BENCH_CALLS (calls per
variant per round, default 50), BENCH_WARMUP (calls per variant before measuring, default 30).
Writes results/bench/work-once.{json,svg}, naming the server's version.
Exit codes: 0 done, 1 failed (e.g. the server unreachable), 2 a usage mistake.`;

/** Completed keys the repeat variant asks about, recorded before the rounds. */
const SEEDED_KEYS = 50;
/** Lock ids (and documents of part B) a variant cycles over. */
const IDS = 50;

interface Tally {
  latencies: number[];
  /** p50 of each round's slice, for the spread of the ratios over rounds. */
  roundP50: number[];
  calls: number;
  requests: number;
  roundTrips: number;
  /** Requests by kind ("POST _bulk"), summed over the calls. */
  kinds: Map<string, number>;
}

interface Variant {
  part: 'A' | 'B';
  name: string;
  counter: RequestCounter;
  call: (iteration: number) => Promise<void>;
  tally: Tally;
}

/**
 * Counts a client's requests while a tally is set: each response is a request (as test/support/lock-traffic.ts
 * counts), each request sent while none was in flight starts a round trip.
 */
class RequestCounter {
  tally: Tally | undefined;
  inFlight = 0;
  /** Requests that outlived the call that sent them (background work would be miscounted). */
  strays = 0;

  constructor(client: { diagnostic: SearchClient['diagnostic'] }) {
    client.diagnostic.on('request', (_error, event) => {
      if (this.tally) {
        if (this.inFlight === 0) this.tally.roundTrips++;
        const params = event?.meta.request.params;
        const kind = params ? `${params.method} ${pathKind(params.path)}` : 'unknown';
        this.tally.kinds.set(kind, (this.tally.kinds.get(kind) ?? 0) + 1);
      }
      this.inFlight++;
    });
    client.diagnostic.on('response', () => {
      this.inFlight--;
      if (this.tally) this.tally.requests++;
    });
  }
}

/** `/index/_doc/id` → `_doc`, `/_mget` → `_mget`: the API, without index names and ids. */
const pathKind = (path: string): string => path.split('/').find((segment) => segment.startsWith('_')) ?? path;

const newTally = (): Tally => ({ latencies: [], roundP50: [], calls: 0, requests: 0, roundTrips: 0, kinds: new Map() });

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
};

const isGrant = (outcome: unknown): outcome is Grant => typeof outcome === 'object' && outcome !== null && 'leaseToken' in outcome;

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {});
  if (printHelp(values, USAGE)) return 0;
  const rounds = numberFlag('BENCH_ROUNDS', process.env.BENCH_ROUNDS, { integer: true, min: 1 }, 10);
  const callsPerSlice = numberFlag('BENCH_CALLS', process.env.BENCH_CALLS, { integer: true, min: 1 }, 50);
  const warmup = numberFlag('BENCH_WARMUP', process.env.BENCH_WARMUP, { integer: true, min: 0 }, 30);
  const store = await resolveStore('elasticsearch', (line) => console.log(line));
  // The service's client, and the user's own for part B (as an application would have it, beside the lock service).
  const client = store.client({ requestTimeoutMs: 30_000 });
  const own: Client = createElasticsearchClient(store.connection({ requestTimeoutMs: 30_000 }));
  const server = await describeServer(client);
  console.log(`server: ${serverLabel(server)} at ${store.url}`);
  const run = randomBytes(3).toString('hex');
  // One index per variant: none pays for another's segments and merges.
  const lockIndices = ['plain', 'record', 'repeat'].map((name) => `bench-work-${name}-${run}`) as [string, string, string];
  const dataIndices = ['index', 'fenced-index', 'update', 'fenced-update'].map((name) => `bench-writes-${name}-${run}`) as [string, string, string, string];
  const lockCounter = new RequestCounter(client);
  const ownCounter = new RequestCounter(own);
  try {
    for (const index of lockIndices) await ensureLockIndex(client, index);
    for (const index of dataIndices) await own.indices.create({ index, settings: { number_of_shards: 1, number_of_replicas: 0 } });
    await own.cluster.health({ index: dataIndices, wait_for_status: 'green', timeout: '30s' });
    // Signed lease tokens, as deployed with LOCK_TOKEN_SIGNING_KEY: the release of an exclusive lease is one conditional delete.
    const settings = { tokenSigningKey: randomBytes(32) };
    const [plainEngine, recordEngine, repeatEngine] = lockIndices.map((index) => createLockService({ client, index, settings }).service) as [
      ReturnType<typeof createLockService>['service'],
      ReturnType<typeof createLockService>['service'],
      ReturnType<typeof createLockService>['service'],
    ];
    const lock = (prefix: string, iteration: number) => ({
      namespace: 'bench',
      granularity: 'document',
      ids: [`${prefix}${iteration % IDS}`],
      owner: 'bench',
      ttlMs: 30_000,
    });
    const result = { rows: 3, report: 's3://bench/reports/0001.json' };
    let messages = 0;

    /** One delivery that runs the work: takes it on, records it completed. */
    const recordedCycle = async (engine: typeof recordEngine, target: ReturnType<typeof lock>, idempotencyKey: string): Promise<void> => {
      const outcome = await engine.acquireWork({ ...target, idempotencyKey });
      if (!isGrant(outcome)) throw new Error(`acquireWork of the new key ${idempotencyKey} answered ${JSON.stringify(outcome)}`);
      const released = await engine.release({ leaseToken: outcome.leaseToken, record: { status: 'completed', result } });
      if (released.recorded !== 'completed') throw new Error(`release with a record answered ${JSON.stringify(released)}`);
    };

    console.log(`recording ${SEEDED_KEYS} completed keys for the repeat variant...`);
    for (let key = 0; key < SEEDED_KEYS; key++) await recordedCycle(repeatEngine, lock('s', key), `seed-${key}`);

    // Part B: a real grant's fencing token (one holder writing many times: external_gte accepts its own token again).
    const holder = await plainEngine.acquire({ ...lock('token', 0) });
    await plainEngine.release({ leaseToken: holder.leaseToken });
    const fencingToken = holder.fencingToken;
    const [plainIndexIndex, fencedIndexIndex, plainUpdateIndex, fencedUpdateIndex] = dataIndices;
    const order = (iteration: number) => ({
      orderId: `o${iteration % IDS}`,
      customer: `c${iteration % 7}`,
      status: 'open',
      amount: 129.9 + (iteration % 10),
      items: [
        { sku: 'A-100', quantity: 2 },
        { sku: 'B-220', quantity: 1 },
      ],
      updatedAt: new Date().toISOString(),
    });
    const change = () => ({ status: 'paid', updatedAt: new Date().toISOString() });
    console.log(`indexing ${IDS} documents for each update variant...`);
    for (let id = 0; id < IDS; id++) {
      await own.index({ index: plainUpdateIndex, id: `o${id}`, document: order(id) });
      await fencedIndex(own, { index: fencedUpdateIndex, id: `o${id}`, fencingToken, document: order(id) });
    }

    const variants: Variant[] = [
      {
        part: 'A',
        name: 'plain lock cycle (acquire + release)',
        counter: lockCounter,
        call: async (iteration) => {
          const grant = await plainEngine.acquire(lock('p', iteration));
          await plainEngine.release({ leaseToken: grant.leaseToken });
        },
        tally: newTally(),
      },
      {
        part: 'A',
        name: 'cycle with a completion record',
        counter: lockCounter,
        call: (iteration) => recordedCycle(recordEngine, lock('r', iteration), `${run}-${messages++}`),
        tally: newTally(),
      },
      {
        part: 'A',
        name: 'repeat of a completed key (recorded answer)',
        counter: lockCounter,
        call: async (iteration) => {
          const key = iteration % SEEDED_KEYS;
          const outcome = await repeatEngine.acquireWork({ ...lock('s', key), idempotencyKey: `seed-${key}` });
          if (isGrant(outcome) || (outcome as CompletedWork).status !== 'completed')
            throw new Error(`repeat of seed-${key} answered ${JSON.stringify(outcome)}`);
        },
        tally: newTally(),
      },
      {
        part: 'B',
        name: 'unfenced index (client.index)',
        counter: ownCounter,
        call: async (iteration) => {
          await own.index({ index: plainIndexIndex, id: `o${iteration % IDS}`, document: order(iteration) });
        },
        tally: newTally(),
      },
      {
        part: 'B',
        name: 'fenced index (fencedIndex)',
        counter: ownCounter,
        call: async (iteration) => {
          await fencedIndex(own, { index: fencedIndexIndex, id: `o${iteration % IDS}`, fencingToken, document: order(iteration) });
        },
        tally: newTally(),
      },
      {
        part: 'B',
        name: 'plain partial update (client.update)',
        counter: ownCounter,
        call: async (iteration) => {
          await own.update({ index: plainUpdateIndex, id: `o${iteration % IDS}`, doc: change() });
        },
        tally: newTally(),
      },
      {
        part: 'B',
        name: 'fenced update (fencedUpdate: GET + PUT)',
        counter: ownCounter,
        call: async (iteration) => {
          await fencedUpdate(own, { index: fencedUpdateIndex, id: `o${iteration % IDS}`, fencingToken, doc: change() });
        },
        tally: newTally(),
      },
    ];
    const iterations = new Map(variants.map((variant) => [variant, 0]));

    /** `calls` calls of one variant back to back; counted and timed into its tally when `measured`. */
    const slice = async (variant: Variant, calls: number, measured: boolean): Promise<number[]> => {
      const latencies: number[] = [];
      for (let n = 0; n < calls; n++) {
        const iteration = iterations.get(variant)!;
        iterations.set(variant, iteration + 1);
        variant.counter.tally = measured ? variant.tally : undefined;
        const started = performance.now();
        await variant.call(iteration);
        latencies.push(performance.now() - started);
        variant.counter.tally = undefined;
        if (variant.counter.inFlight !== 0) variant.counter.strays++;
      }
      if (measured) {
        variant.tally.latencies.push(...latencies);
        variant.tally.calls += calls;
        variant.tally.roundP50.push(percentile(latencies, 50));
      }
      return latencies;
    };

    console.log(`warming up (${warmup} calls per variant)...`);
    for (const variant of variants) await slice(variant, warmup, false);
    const width = Math.max(...variants.map((variant) => variant.name.length));
    for (let round = 1; round <= rounds; round++) {
      // Every other round runs the variants backwards, so that none always follows the same neighbour.
      for (const variant of round % 2 === 1 ? variants : [...variants].reverse()) {
        const requestsBefore = variant.tally.requests;
        const latencies = await slice(variant, callsPerSlice, true);
        console.log(
          `round ${round}/${rounds}: ${variant.name.padEnd(width)}  ${callsPerSlice} calls, p50 ${percentile(latencies, 50).toFixed(2)} ms, p95 ${percentile(latencies, 95).toFixed(2)} ms, ${((variant.tally.requests - requestsBefore) / callsPerSlice).toFixed(2)} requests/call`,
        );
      }
    }
    const strays = lockCounter.strays + ownCounter.strays;
    if (strays > 0) console.log(`\nwarning: ${strays} calls left a request in flight when they returned; their counts may have moved to the next call`);

    // The table.
    const perCall = (variant: Variant) => ({
      requests: variant.tally.requests / variant.tally.calls,
      roundTrips: variant.tally.roundTrips / variant.tally.calls,
      p50: percentile(variant.tally.latencies, 50),
      p95: percentile(variant.tally.latencies, 95),
      sent: [...variant.tally.kinds]
        .map(([kind, count]) => {
          const each = count / variant.tally.calls;
          return `${Number.isInteger(each) ? each : each.toFixed(2)} ${kind}`;
        })
        .join(' + '),
    });
    const figures = new Map(variants.map((variant) => [variant, perCall(variant)]));
    console.log(
      `\nWork once and fenced writes on ${serverLabel(server)}: one caller, ${rounds} interleaved rounds of ${callsPerSlice} calls per variant (${rounds * callsPerSlice} per variant)\n`,
    );
    const header = (title: string) =>
      `${title.padEnd(width)}  ${'requests'.padStart(8)}  ${'round trips'.padStart(11)}  ${'p50 ms'.padStart(7)}  ${'p95 ms'.padStart(7)}  requests sent per call`;
    for (const part of ['A', 'B'] as const) {
      console.log(header(part === 'A' ? 'A. per call' : 'B. per write'));
      for (const variant of variants.filter((candidate) => candidate.part === part)) {
        const f = figures.get(variant)!;
        console.log(
          `${variant.name.padEnd(width)}  ${f.requests.toFixed(2).padStart(8)}  ${f.roundTrips.toFixed(2).padStart(11)}  ${f.p50.toFixed(2).padStart(7)}  ${f.p95.toFixed(2).padStart(7)}  ${f.sent}`,
        );
      }
      console.log('');
    }
    const named = (prefix: string) => variants.find((variant) => variant.name.startsWith(prefix))!;
    const pairs = [
      { label: 'record / plain', over: named('cycle with a completion record'), under: named('plain lock cycle') },
      { label: 'repeat / plain', over: named('repeat of a completed key'), under: named('plain lock cycle') },
      { label: 'fenced index / unfenced index', over: named('fenced index'), under: named('unfenced index') },
      { label: 'fenced update / plain update', over: named('fenced update'), under: named('plain partial update') },
    ];
    const ratios = pairs.map(({ label, over, under }) => {
      const a = figures.get(over)!;
      const b = figures.get(under)!;
      const perRound = over.tally.roundP50.map((p50, round) => p50 / under.tally.roundP50[round]!);
      return {
        label,
        requests: a.requests / b.requests,
        roundTrips: a.roundTrips / b.roundTrips,
        p50: a.p50 / b.p50,
        p95: a.p95 / b.p95,
        p50PerRound: { min: Math.min(...perRound), max: Math.max(...perRound) },
      };
    });
    const ratioWidth = Math.max(...ratios.map((ratio) => ratio.label.length));
    console.log(
      `${'ratio'.padEnd(ratioWidth)}  ${'requests'.padStart(8)}  ${'round trips'.padStart(11)}  ${'p50'.padStart(5)}  ${'p95'.padStart(5)}  p50 ratio per round`,
    );
    for (const ratio of ratios) {
      console.log(
        `${ratio.label.padEnd(ratioWidth)}  ${ratio.requests.toFixed(2).padStart(8)}  ${ratio.roundTrips.toFixed(2).padStart(11)}  ${ratio.p50.toFixed(2).padStart(5)}  ${ratio.p95.toFixed(2).padStart(5)}  ${ratio.p50PerRound.min.toFixed(2)}–${ratio.p50PerRound.max.toFixed(2)}`,
      );
    }

    const outDir = join('results', 'bench');
    mkdirSync(outDir, { recursive: true });
    const label = `${serverLabel(server)}, one caller, ${rounds} × ${callsPerSlice} calls per variant`;
    writeFileSync(
      join(outDir, 'work-once.svg'),
      latencyChart(
        variants.map((variant) => ({ part: variant.part, label: variant.name, ...figures.get(variant)! })),
        label,
      ),
    );
    writeFileSync(
      join(outDir, 'work-once.json'),
      JSON.stringify(
        {
          server: { ...server, url: store.url },
          rounds,
          callsPerSlice,
          warmup,
          variants: variants.map((variant) => ({ part: variant.part, name: variant.name, calls: variant.tally.calls, ...figures.get(variant)! })),
          ratios,
        },
        null,
        2,
      ),
    );
    console.log(`\nchart: ${join(outDir, 'work-once.svg')}`);
  } finally {
    for (const index of lockIndices) await deleteLockIndex(client, index).catch(() => undefined);
    await own.indices.delete({ index: dataIndices, ignore_unavailable: true }).catch(() => undefined);
    await own.close();
    await client.close();
    await store.stop();
  }
  return 0;
}

/** p50 bars with the p95 as a whisker, per part, each labelled with its requests per call. */
function latencyChart(bars: Array<{ part: 'A' | 'B'; label: string; p50: number; p95: number; requests: number }>, subtitle: string): string {
  const max = Math.max(...bars.map((bar) => bar.p95));
  const rowHeight = 30;
  const labelWidth = 330;
  const plotWidth = 380;
  const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/'/g, '&#39;');
  const parts: string[] = [];
  let y = 56;
  for (const [part, title] of [
    ['A', 'A. per call: lock cycles and completion records'],
    ['B', 'B. per write: fenced against plain writes'],
  ] as const) {
    parts.push(`<text x="10" y="${y + 14}" font-weight="bold">${title}</text>`);
    y += 24;
    for (const bar of bars.filter((candidate) => candidate.part === part)) {
      const p50 = Math.max(1, (bar.p50 / max) * plotWidth);
      const p95 = (bar.p95 / max) * plotWidth;
      const x = (offset: number) => (labelWidth + offset).toFixed(1);
      parts.push(
        `<text x="${labelWidth - 8}" y="${y + 16}" text-anchor="end">${escapeXml(bar.label)}</text>` +
          `<rect x="${labelWidth}" y="${y + 4}" width="${p50.toFixed(1)}" height="18" fill="#3b7dd8"/>` +
          `<line x1="${x(p50)}" y1="${y + 13}" x2="${x(p95)}" y2="${y + 13}" stroke="#333"/>` +
          `<line x1="${x(p95)}" y1="${y + 7}" x2="${x(p95)}" y2="${y + 19}" stroke="#333"/>` +
          `<text x="${x(p95 + 6)}" y="${y + 17}">${bar.p50.toFixed(1)} / ${bar.p95.toFixed(1)} ms, ${bar.requests.toFixed(bar.requests % 1 === 0 ? 0 : 2)} req</text>`,
      );
      y += rowHeight;
    }
    y += 10;
  }
  const width = labelWidth + plotWidth + 190;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y + 10}" font-family="sans-serif" font-size="13" role="img" aria-label="Completion records and fenced writes: latency and Elasticsearch requests per call"><text x="10" y="22" font-weight="bold">Latency p50 (bar) and p95 (whisker), Elasticsearch requests per call</text><text x="10" y="42">${escapeXml(subtitle)}</text>${parts.join('')}</svg>\n`;
}

runCli(main);
