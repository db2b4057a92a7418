/**
 * How long each kind of request the engine sends takes on an Elasticsearch, at a light load: the
 * deployment model's description of a cluster (model.ts), measured without locks, so that what it
 * predicts for each granularity comes from the single node's calibration alone. Requests go one at a
 * time, writes and reads interleaved (so a slow moment falls on both), to an index with the lock
 * index's settings (one primary shard, a replica where there is a second node), which is deleted
 * afterwards.
 */

import { LOCK_INDEX_DEFINITION } from '../../functions/store/lock-index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { type PerKind, perKind, type RequestKind } from './model.js';
import { spreadOf } from './trials.js';

export const DEFAULT_LATENCY_ROUNDS = 60;

/** The engine's kinds of request on a probe index, each timed into its kind's samples. */
class ProbeRequests {
  readonly samples: Record<RequestKind, number[]> = { write: [], read: [], refresh: [], search: [] };
  constructor(
    private readonly client: SearchClient,
    private readonly index: string,
  ) {}

  /** The engine's writes are conditional: a create, then a delete on the sequence number it got. */
  async writePair(id: string): Promise<void> {
    const { client, index } = this;
    let created: { _seq_no?: number; _primary_term?: number } = {};
    await this.timed('write', async () => {
      created = await client.index({ index, id, op_type: 'create', document: { namespace: 'latency-probe', key: id } });
    });
    await this.timed('write', () => client.delete({ index, id, if_seq_no: created._seq_no!, if_primary_term: created._primary_term! }));
  }

  read(id: string): Promise<void> {
    return this.timed('read', () => this.client.mget({ index: this.index, ids: ['kept', id] }));
  }

  /** A rename refreshes, then searches below. */
  async refreshThenSearch(): Promise<void> {
    await this.timed('refresh', () => this.client.indices.refresh({ index: this.index }));
    await this.timed('search', () => this.client.search({ index: this.index, query: { term: { namespace: 'latency-probe' } }, size: 10 }));
  }

  /** Each kind's median, NaN for a kind not sent. */
  medians(): PerKind {
    return perKind((kind) => spreadOf(this.samples[kind]).median);
  }

  private async timed(kind: RequestKind, request: () => Promise<unknown>): Promise<void> {
    const started = performance.now();
    await request();
    this.samples[kind].push(performance.now() - started);
  }
}

/** Runs `probe` on a fresh index with the lock index's settings and one stored document, then deletes it. */
async function onProbeIndex(client: SearchClient, index: string, probe: (requests: ProbeRequests) => Promise<void>): Promise<PerKind> {
  await client.indices.create({ index, ...LOCK_INDEX_DEFINITION } as Parameters<SearchClient['indices']['create']>[0]);
  try {
    await client.cluster.health({ index, wait_for_status: 'green', timeout: '30s' }).catch(() => {});
    await client.index({ index, id: 'kept', document: { namespace: 'latency-probe', key: 'kept' }, refresh: true });
    const requests = new ProbeRequests(client, index);
    await probe(requests);
    return requests.medians();
  } finally {
    await client.indices.delete({ index }).catch(() => {});
  }
}

/** Median latency of each kind of request, ms. */
export function measureRequestLatency(client: SearchClient, index: string, rounds = DEFAULT_LATENCY_ROUNDS): Promise<PerKind> {
  return onProbeIndex(client, index, async (requests) => {
    for (let round = 0; round < rounds; round++) {
      await requests.writePair(`w${round}`);
      await requests.read(`w${round}`);
    }
    // Apart from the writes: a refresh leaves work behind on every copy (new segments) that slowed
    // the next requests when interleaved (writes 6.9 ms on the cluster, against about 3.4 ms per
    // request that the lock operations saw there), and the lock workloads refresh rarely.
    for (let round = 0; round < Math.ceil(rounds / 2); round++) {
      await client.index({ index, id: `r${round}`, document: { namespace: 'latency-probe', key: `r${round}` } });
      await requests.refreshThenSearch();
    }
  });
}

/** How much longer each kind of request takes on `there` than on `here`, ms. */
export const addedLatency = (here: PerKind, there: PerKind): PerKind => perKind((kind) => there[kind] - here[kind]);

/** Most requests of the background load in flight at once: a slow server is measured, not buried. */
const MAX_IN_FLIGHT = 32;

/**
 * How long each kind of request takes while the server carries `rates` (requests per second of each
 * kind) of lock-free requests: the engine's requests, minus the locks. A refresh's cost is the
 * writes since the last one and what else the copies are doing, so idle figures understate it
 * under load (on the 3-node cluster a refresh took 21-62 ms idle and 35-137 ms during light lock
 * probes). Writes are create + conditional delete pairs, reads an mget of two ids, and each refresh
 * is followed by a search. Kinds without a rate are not measured: NaN. Medians, like the idle
 * figures: one stall of this shared machine should not move the figure.
 */
export function measureLoadedLatency(client: SearchClient, index: string, rates: PerKind, seconds: number): Promise<PerKind> {
  return onProbeIndex(client, index, async (requests) => {
    let written = 0;
    await Promise.all([
      paced(rates.write / 2, seconds, () => requests.writePair(`w${written++}`)),
      paced(rates.read, seconds, () => requests.read(`w${written - 1}`)),
      paced(rates.refresh, seconds, () => requests.refreshThenSearch()),
    ]);
  });
}

/** Starts `task` `perSecond` times a second for `seconds` (open loop, evenly spaced, at most MAX_IN_FLIGHT at once), then waits for them. */
async function paced(perSecond: number, seconds: number, task: () => Promise<void>): Promise<void> {
  const count = Math.floor(perSecond * seconds);
  if (count === 0) return;
  const started = performance.now();
  const running = new Set<Promise<void>>();
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (running.size >= MAX_IN_FLIGHT) await Promise.race(running);
    const one: Promise<void> = task()
      .catch(() => {})
      .finally(() => running.delete(one));
    running.add(one);
  }
  await Promise.all(running);
}
