/**
 * npm run bench:directories — how a directory lock makes its own write searchable before it searches
 * below, side by side in one run: a forced refresh per directory lock (the engine's default) against
 * waiting for the lock index's scheduled refresh (settings.scheduledRefreshMs, the index's
 * refresh_interval shortened to match), on the mixed workload of bench:engine (16 workers writing
 * files under one hot directory, a share of them locking its subdirectories). Rows are interleaved
 * over rounds; the ratios and the directory locks' latency are the result, with the time each
 * directory lock spent in its refresh and search below (the rest: waiting for its turn behind other
 * directory locks, for the files below to end, its writes and reads). A reference row of document
 * locks on distinct ids gives bench:engine's ratio; the file locks that meet a directory lock either
 * back off (the engine before settings.retry.watchAbove) or watch it. Every row also reports the
 * cluster's CPU per cycle (its nodes' own counters).
 *
 * The striped rows price a design without the refresh: every file lock leaves a trace that a
 * directory lock reads in real time, an entry in one of a few intention documents of each directory
 * above it (a scripted update adding it after the grant, one taking it out before the release), and
 * a directory lock reads its stripes with one realtime mget and the locks they name from the primary,
 * instead of refreshing and searching (the store's search below is replaced by that read). A model of
 * the design's costs and waits, not a safe implementation: a real one would write the trace in the
 * acquire's own bulk, before the grant, and check it; here it costs two more round trips per file.
 */
import { randomBytes } from 'node:crypto';
import { deleteLockIndex, ElasticsearchLockStore, ensureLockIndex } from '../functions/store/index.js';
import type { SearchClient } from '../functions/store/search-client.js';
import { chooseStore, resolveStore, STORE_FLAG, STORE_RULE } from '../infra/lib/store-target.js';
import { lockDocId } from '../packages/engine/src/doc-id.js';
import { ancestorsOf } from '../packages/engine/src/granularity/index.js';
import { LockService } from '../packages/engine/src/service.js';
import type { BelowQuery, BelowResult } from '../packages/engine/src/store.js';
import { numberFlag, parseFlags, printHelp } from '../tools/cli/flags.js';
import { runCli } from '../tools/cli/run-cli.js';
import { interpose } from '../tools/shared/interposed-store.js';
import { ClusterCpuMeter } from './lib/cluster-cpu.js';
import { slicesFromEnv } from './lib/slices.js';
import { uncontendedAcquire } from './uncontended-directory.js';

const USAGE = `usage: npm run bench:directories [-- --store S] [-- --verbose]

Directory locks with a forced refresh each against waiting for the scheduled refresh, and files that
back off from a directory lock against files that watch it, on one hot directory, beside document
locks; rows interleaved over rounds.
  --store S   ${STORE_RULE}
Settings by environment: BENCH_SHARE (share of directory locks, default 0.05), BENCH_CONCURRENCY
(default 16), BENCH_SECONDS (default 3 per slice), BENCH_ROUNDS (default 4), BENCH_UNCONTENDED
(cycles of each kind of lock taken alone, after the rows; default 200).
Exit codes: 0 done, 1 failed, 2 a usage mistake.`;

interface Design {
  name: string;
  /** The lock index's refresh_interval, in ms (default 1 s). */
  indexRefreshMs?: number;
  /** The engine waits for the scheduled refresh instead of forcing one. */
  scheduled?: boolean;
  /** A file refused by the directory lock above it backs off blindly (the engine before settings.retry.watchAbove). */
  backoffAbove?: boolean;
  /** The reference: the same workers on document locks of distinct ids (bench:engine's denominator). */
  documents?: boolean;
  /** Striped intention documents per directory, written by every file lock and read by every directory lock. */
  stripes?: number;
  /** The share of directory locks, when not the run's (0: files only). */
  share?: number;
}

const DESIGNS: Design[] = [
  { name: 'reference: document locks, distinct ids', documents: true },
  { name: 'forced refresh; files back off from the directory lock', backoffAbove: true },
  { name: 'forced refresh; files watch the directory lock (default)' },
  { name: 'scheduled refresh (index 50 ms); files back off', indexRefreshMs: 50, scheduled: true, backoffAbove: true },
  { name: 'scheduled refresh (index 50 ms); files watch', indexRefreshMs: 50, scheduled: true },
  { name: 'striped intentions (4 per directory), read instead of searching', stripes: 4 },
  { name: 'files only (no directory locks)', share: 0 },
  { name: 'files only, writing striped intentions', share: 0, stripes: 4 },
];

const stripeId = (directory: string, stripe: number): string => `bench|i|${directory}|${stripe}`;

/** Adds (or with `remove`, takes out) a lease's entry in one stripe of each directory above `path`: one scripted update each, in one bulk. */
function intentionWrites(index: string, path: string, stripe: number, lease: string, remove: boolean): object[] {
  const script = remove
    ? { source: 'ctx._source.entries.removeIf(e -> e.lease == params.lease)', params: { lease } }
    : {
        source: 'ctx._source.entries.removeIf(e -> e.lease == params.lease); ctx._source.entries.add(params.entry)',
        params: { lease, entry: { lease, path, mode: 'IX' } },
      };
  return ancestorsOf(path).flatMap((directory) => [
    { update: { _index: index, _id: stripeId(directory, stripe), retry_on_conflict: 10 } },
    { script, upsert: { entries: remove ? [] : [{ lease, path, mode: 'IX' }] } },
  ]);
}

/**
 * The striped design's look below: the directory's stripes by one realtime mget, then the locks their
 * entries name, with the directory's own document, from the primary.
 */
async function readStripes(client: SearchClient, store: ElasticsearchLockStore, intentions: string, stripes: number, query: BelowQuery): Promise<BelowResult> {
  const answer = await client.mget<{ entries?: Array<{ path: string }> }>({
    index: intentions,
    ids: Array.from({ length: stripes }, (_, each) => stripeId(query.path!, each)),
    realtime: true,
  });
  const paths = new Set(answer.docs.flatMap((doc) => ('_source' in doc ? (doc._source?.entries ?? []).map((entry) => entry.path) : [])));
  const ids = [...paths].map((path) => lockDocId(query.namespace, 'tree', path));
  const locks = await store.readPrimary([query.selfDocId, ...ids]);
  const below = ids.flatMap((id) => {
    const lock = locks.get(id);
    return lock?.body.holders.some((holder) => holder.expiresAt > query.liveAfter) ? [lock] : [];
  });
  return { self: locks.get(query.selfDocId) ?? null, below };
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { ...STORE_FLAG });
  if (printHelp(values, USAGE)) return 0;
  const share = numberFlag('BENCH_SHARE', process.env.BENCH_SHARE, { min: 0, max: 1 }, 0.05);
  const { concurrency, secondsPerSlice: seconds, rounds } = slicesFromEnv({ concurrency: 16, secondsPerSlice: 3, rounds: 4 });
  const uncontended = numberFlag('BENCH_UNCONTENDED', process.env.BENCH_UNCONTENDED, { integer: true, min: 0 }, 200);
  const target = await resolveStore(chooseStore(values.store), (line) => console.log(line));
  const client = target.client({ requestTimeoutMs: 30_000 });
  const run = randomBytes(3).toString('hex');
  const rows = await Promise.all(
    DESIGNS.map(async (design, position) => {
      const index = `bench-directories-${position}-${run}`;
      await ensureLockIndex(client, index);
      if (design.indexRefreshMs) await client.indices.putSettings({ index, settings: { refresh_interval: `${design.indexRefreshMs}ms` } });
      const settings = {
        ...(design.scheduled ? { scheduledRefreshMs: design.indexRefreshMs! } : {}),
        ...(design.backoffAbove ? { retry: { watchAbove: false } } : {}),
      };
      // The search below (with the refresh or the wait for one before it), timed: the part of a directory lock's time the design changes.
      const timing = { recording: false, searchMs: 0, searches: 0 };
      const intentions = `${index}-intentions`;
      const inner = new ElasticsearchLockStore(client, index);
      const store = interpose(inner, {
        async findLiveBelow(query, next) {
          const started = performance.now();
          const found = design.stripes ? await readStripes(client, inner, intentions, design.stripes, query) : await next(query);
          if (timing.recording) {
            timing.searchMs += performance.now() - started;
            timing.searches++;
          }
          return found;
        },
      });
      if (design.stripes)
        await client.indices.create({ index: intentions, settings: { number_of_shards: 1, auto_expand_replicas: '0-1' }, mappings: { dynamic: false } });
      return {
        design,
        index,
        intentions,
        engine: new LockService(store, settings),
        cycles: 0,
        clusterCpuMs: 0,
        directoryMs: [] as number[],
        timing,
      };
    }),
  );
  type Row = (typeof rows)[number];
  const cluster = new ClusterCpuMeter(target.client({ requestTimeoutMs: 30_000 }));
  /** The striped design's extra writes: a file's intention entries after its grant (or, with `remove`, before its release). */
  const trace = async (row: Row, path: string, stripe: number, lease: string, remove: boolean): Promise<void> => {
    if (row.design.stripes) await client.bulk({ operations: intentionWrites(row.intentions, path, stripe, lease, remove) });
  };
  const slice = async (row: Row, sliceSeconds: number, record: boolean): Promise<void> => {
    const end = Date.now() + sliceSeconds * 1_000;
    row.timing.recording = record;
    const cpuBefore = record ? await cluster.totalMillis() : 0;
    await Promise.all(
      Array.from({ length: concurrency }, async (_, worker) => {
        for (let iteration = 0; Date.now() < end; iteration++) {
          const directory = !row.design.documents && Math.random() < (row.design.share ?? share);
          const path = directory ? `/hot/d${iteration % 4}` : `/hot/d${worker % 4}/f${worker}-${iteration % 50}`;
          const started = performance.now();
          const owner = `w${worker}`;
          const grant = await row.engine.acquire(
            row.design.documents
              ? { namespace: 'bench', granularity: 'document', ids: [`f${worker}-${iteration % 50}`], owner, waitMs: 10_000 }
              : { namespace: 'bench', granularity: 'tree', path, owner, waitMs: 10_000 },
          );
          if (record && directory) row.directoryMs.push(performance.now() - started);
          const stripe = worker % (row.design.stripes ?? 1);
          const lease = grant.leaseToken.slice(-16);
          // Nothing is done under the lock: the trace goes in after the grant and out before the release.
          if (!directory) {
            await trace(row, path, stripe, lease, false);
            await trace(row, path, stripe, lease, true);
          }
          await row.engine.release({ leaseToken: grant.leaseToken });
          if (record) row.cycles++;
        }
      }),
    );
    if (record) row.clusterCpuMs += (await cluster.totalMillis()) - cpuBefore;
  };
  try {
    console.log(`${target.name}, ${concurrency} workers, ${share * 100} % directory locks; warming up...`);
    for (const row of rows) await slice(row, 1, false);
    for (let round = 1; round <= rounds; round++) {
      for (const row of round % 2 === 1 ? rows : [...rows].reverse()) {
        process.stdout.write(`round ${round}/${rounds}: ${row.design.name}... `);
        const before = row.cycles;
        await slice(row, seconds, true);
        console.log(`${((row.cycles - before) / seconds).toFixed(0)} cycles/s`);
      }
    }
    const documents = rows[0]!.cycles;
    const baseline = rows[1]!.cycles;
    console.log('');
    for (const row of rows) {
      const sorted = [...row.directoryMs].sort((a, b) => a - b);
      const at = (q: number): string => (sorted.length > 0 ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!.toFixed(0) : '-');
      const mean = sorted.length > 0 ? sorted.reduce((sum, ms) => sum + ms, 0) / sorted.length : 0;
      const searchPerLock = sorted.length > 0 ? row.timing.searchMs / sorted.length : 0;
      const searchShare = mean > 0 ? ` = ${Math.round((100 * searchPerLock) / mean)} % of their mean ${mean.toFixed(0)} ms` : '';
      const cpuPerCycle = (row: Row): number => (1000 * row.clusterCpuMs) / Math.max(1, row.cycles);
      console.log(
        `${row.design.name.padEnd(60)} ${(row.cycles / (rounds * seconds)).toFixed(0).padStart(5)} cycles/s  ${(row.cycles / documents).toFixed(2)} of documents, ${(row.cycles / baseline).toFixed(2)} of the first tree row; cluster CPU ${cpuPerCycle(row).toFixed(0)} µs/cycle (${(cpuPerCycle(row) / cpuPerCycle(rows[0]!)).toFixed(2)} of documents)  directory lock p50 ${at(0.5)} ms, p95 ${at(0.95)} ms (${sorted.length})` +
          (sorted.length > 0
            ? `; ${row.design.stripes ? 'stripes read' : 'refresh + search'} ${searchPerLock.toFixed(0)} ms per directory lock${searchShare}`
            : ''),
      );
    }
    if (uncontended > 0) {
      console.log('');
      await uncontendedAcquire(rows.find((row) => row.design.name.endsWith('(default)'))!.engine, uncontended, (line) => console.log(line));
    }
  } finally {
    for (const row of rows) {
      await deleteLockIndex(client, row.index);
      if (row.design.stripes) await client.indices.delete({ index: row.intentions }, { ignore: [404] });
    }
    await client.close();
    await target.stop();
  }
  return 0;
}

runCli(main);
