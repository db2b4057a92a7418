/**
 * What a granularity would do in the deployment the user runs, from what was measured here. Pure.
 *
 * Calibration (the engine-only layer on one local node): the granularity's capacity, the Elasticsearch
 * requests of one operation by kind, time per operation spent in Elasticsearch and in backoff at a
 * light load, the critical section.
 *
 * Deployment: N concurrent functions (one operation at a time each) against a cluster whose lock
 * index has S primary shards (default 1), described by how much longer each kind of request takes
 * there than on the calibration node (measured by `npm run loadtest:model`, else one hop per
 * replicated write and refresh). Three bounds, the lowest wins:
 *   - functions: N / (time in Elasticsearch + backoff + critical section);
 *   - contention (serialisation for global, one lock): a lock is held for the critical section and
 *     the requests around it, and at the latency objective the rate times that hold stays what it
 *     was on the calibration node (exactly so for global, where each operation waits for the one
 *     before) - so longer requests leave proportionally less capacity. The hold is averaged per file
 *     covered, not per operation: a rename's lock over 40 files is what 40 edits run into, and a
 *     tree directory lock's refresh and search, much slower on a replicated index, weigh that much.
 *     Never above the ceiling: the calibrated capacity (one primary shard doing the same work as the
 *     single node did) times the shards' parallelism P.
 *
 * Shards. Requests are routed by namespace, so a namespace lives on one shard and its load never
 * spreads; namespaces go to shards by a hash, like balls thrown into bins. With k equally loaded
 * namespaces, the primaries spread evenly over the nodes and each node as fast as the calibration
 * node, the rate stops growing when the busiest node is full: P = k / E[namespaces on the busiest
 * node], the expectation exact over the hash placements (expectedBusiest; beyond 1,024 namespaces
 * the figure for 1,024, a little low). A node with several primaries counts once (shards beyond the
 * nodes add no CPU or disk), so P <= min(S, nodes) and P <= k; one namespace, one shard or one node
 * give P = 1 exactly, the model without shards. k / E[max] rather than E[k / max]: a little below
 * the mean over placements, on the safe side. This assumes each primary has its own node's CPU and
 * disk. The local 3-node cluster does not (three nodes on two cores and one disk): there 3 shards
 * over 64 namespaces measured 0.59-0.79 of the 1-shard rate (`npm run bench:shards`), where this
 * model says 2.5x. The kit's workload runs in one namespace at a time (NAMESPACES_PER_RUN), so for
 * its figures shards add nothing.
 *
 * The p99 tail, a third bound. The objective judges the acquire p99, and under tree that is the
 * renames and what waits behind them (at a light load, reads held out by a rename; 1% of operations
 * is a fifth of the 5% renames), each rename with its forced refresh and search below, far slower on
 * a replicated index. Scaling the mean hold does not see that the p99 spends more of the 250 ms in
 * those requests there and has less left to wait in. So the calibration keeps every probe's p99
 * against its rate (the trend, made non-decreasing) and each kind of operation's requests; on the
 * deployment the p99 takes tailAdded longer, one operation of the kind whose requests gain the most
 * there, and the rate falls as the trend falls between the objective and the objective less
 * tailAdded, anchored at the calibrated capacity and scaled by the longer holds like the contention
 * bound (which it equals when nothing is added). Replicas' CPU is not charged: warmed-up clusters
 * showed no such cost at these rates (document 160-175 ops/s on both).
 */

export const REQUEST_KINDS = ['write', 'read', 'refresh', 'search'] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];
export type PerKind = Record<RequestKind, number>;

/** A figure for each kind of request. */
export const perKind = (value: (kind: RequestKind) => number): PerKind =>
  ({ write: value('write'), read: value('read'), refresh: value('refresh'), search: value('search') }) satisfies PerKind;

export const noRequests = (): PerKind => perKind(() => 0);

export interface Calibration {
  granularity: string;
  /** Engine-only capacity on the single node, ops/s. */
  capacity: number;
  requestsPerOp: number;
  /** Writes / requests. */
  writeShare: number;
  /** Requests of one operation by kind at a light load (results before it was recorded: derived from requestsPerOp and writeShare). */
  requestMix?: PerKind;
  /** Per operation at a light load, ms. */
  esMsPerOp: number;
  backoffMsPerOp: number;
  criticalSectionMs: number;
  /** Mean latency of each kind of request during that light-load probe, ms (results before it was recorded: none). */
  esMsByKind?: PerKind;
  /**
   * Time in Elasticsearch and requests per operation weighted by the files each lock covers (the
   * engine driver's perCoveredFile): what contention is made of. Results before it was recorded:
   * the plain per-operation figures.
   */
  perCoveredFile?: { esMsPerOp: number; requestMix: PerKind };
  /** What the latency objective looked like on the calibration node (results before it was recorded: none, no latency bound). */
  p99?: P99Calibration;
}

/** One capacity probe: the offered rate and the acquire p99 it measured. */
export interface P99Point {
  rate: number;
  p99Ms: number;
}

export interface P99Calibration {
  /** The objective's acquire p99, ms. */
  objectiveMs: number;
  /** Every probe of the capacity search (of every trial, for a median calibration). */
  curve: P99Point[];
  /** Requests of one operation of each kind (read, edit, rename, ...) at a light load. */
  requestsByOp: Record<string, PerKind>;
}

export interface Deployment {
  functions: number;
  nodes: number;
  replicas: number;
  /** Primary shards of the lock index (index:create --shards); 1 in the kit's own measurements. */
  shards: number;
  /** Namespaces the workload spreads over, equally loaded (requests are routed by namespace). */
  namespaces: number;
  /** How much longer each kind of request takes on the deployment than on the calibration node, ms. */
  addedMs: PerKind;
  /** Where addedMs comes from, for the assumptions. */
  addedMsSource: string;
}

export interface Prediction {
  granularity: string;
  capacity: number;
  bound: 'functions' | 'contention' | 'serialisation' | 'p99 tail';
  /** Time of one operation in a function at a light load, ms (acquire + release + critical section + backoff). */
  operationMs: number;
  /** The kind of operation the p99 is made of and how much longer it takes on the deployment, ms (calibrations with p99 figures). */
  tail?: { op: string; addedMs: number };
}

/** The deployment the report predicts when nothing was measured on it: a replicated write or refresh waits one more hop. */
export function deploymentFromHop(options: {
  functions: number;
  nodes: number;
  replicas: number;
  hopMs: number;
  /** Default 1. */
  shards?: number;
  /** Default 1. */
  namespaces?: number;
}): Deployment {
  const hop = options.replicas > 0 ? options.hopMs : 0;
  return {
    functions: options.functions,
    nodes: options.nodes,
    replicas: options.replicas,
    shards: options.shards ?? 1,
    namespaces: options.namespaces ?? 1,
    addedMs: { write: hop, read: 0, refresh: hop, search: 0 },
    addedMsSource: `a replicated write or refresh costs ${options.hopMs} ms more (--hop-ms); reads and searches as here`,
  };
}

export function requestMixOf(calibration: Calibration): PerKind {
  if (calibration.requestMix) return calibration.requestMix;
  const writes = calibration.requestsPerOp * calibration.writeShare;
  return { ...noRequests(), write: writes, read: calibration.requestsPerOp - writes };
}

const addedMs = (mix: PerKind, deployment: Deployment): number => REQUEST_KINDS.reduce((sum, kind) => sum + mix[kind] * deployment.addedMs[kind], 0);

/** Extra time in Elasticsearch of one operation on the deployment, ms. */
export const addedMsPerOp = (calibration: Calibration, deployment: Deployment): number => addedMs(requestMixOf(calibration), deployment);

/** Partial sums below this are dropped: at most bins x balls of them, far below the 1e-9 the sum stops at. */
const NEGLIGIBLE = 1e-20;

/**
 * The expected number of balls in the fullest bin when `balls` balls are thrown independently into
 * bins with the probabilities `shares` (summing to 1; equal shares: the classic balls into bins).
 * Exact: E[max] = sum over m >= 0 of P(max > m), and P(max <= m) by poissonisation - with bin b
 * holding an independent Poisson(balls x share_b), the counts given their sum = balls are the
 * multinomial ones, so P(max <= m) = P(every count <= m and the sum = balls) / P(Poisson(balls) =
 * balls), the numerator a convolution over the bins of the counts cut at m. Pure, no sampling; one
 * bin gives `balls`, one ball 1, exactly. Work about bins x balls x m per m: milliseconds up to a
 * thousand balls over tens of bins, a second for 4,096 over 64.
 */
export function expectedBusiest(balls: number, shares: readonly number[]): number {
  if (!Number.isInteger(balls) || balls < 0) throw new RangeError(`balls must be a whole number >= 0 (got ${balls})`);
  const bins = shares.filter((share) => share > 0);
  const total = bins.reduce((sum, share) => sum + share, 0);
  if (bins.length === 0 || !(Math.abs(total - 1) < 1e-9)) throw new RangeError(`shares must be positive and sum to 1 (got ${shares.join(', ')})`);
  if (balls <= 1 || bins.length === 1) return balls;
  const logFactorial = [0];
  for (let n = 1; n <= balls; n++) logFactorial.push(logFactorial[n - 1]! + Math.log(n));
  const poisson = (mean: number, n: number): number => Math.exp(n * Math.log(mean) - mean - logFactorial[n]!);
  const pmfs = new Map<number, Float64Array>();
  const pmfOf = (share: number): Float64Array => {
    let pmf = pmfs.get(share);
    if (!pmf) {
      const mean = balls * share;
      pmf = Float64Array.from({ length: balls + 1 }, (_, n) => poisson(mean, n));
      pmfs.set(share, pmf);
    }
    return pmf;
  };
  const sumIsBalls = poisson(balls, balls);
  const atMost = (m: number): number => {
    // spread[t]: the first bins hold t balls in all, none more than m. Only totals the later bins can still complete to `balls` are kept.
    let spread = new Float64Array(balls + 1);
    spread[0] = 1;
    let top = 0;
    bins.forEach((share, b) => {
      const pmf = pmfOf(share);
      const low = Math.max(0, balls - m * (bins.length - 1 - b));
      const high = Math.min(balls, top + m);
      const next = new Float64Array(balls + 1);
      for (let t = 0; t <= top; t++) {
        const p = spread[t]!;
        // Every later factor is a probability, so what such a total could still add is below NEGLIGIBLE.
        if (p < NEGLIGIBLE) continue;
        for (let c = Math.max(0, low - t); c <= Math.min(m, high - t); c++) next[t + c]! += p * pmf[c]!;
      }
      spread = next;
      top = high;
    });
    return Math.min(1, spread[balls]! / sumIsBalls);
  };
  // P(max > m) is 1 below ceil(balls / bins) (pigeonhole) and falls fast above it.
  const lowest = Math.ceil(balls / bins.length);
  let expected = lowest;
  for (let m = lowest; m < balls; m++) {
    const above = 1 - atMost(m);
    if (above < 1e-9) break; // below the rounding of the sums with thousands of balls; the rest of the tail is smaller still
    expected += above;
  }
  return expected;
}

/** Each node's share of the primaries when S primaries spread as evenly as they can over the nodes (at most one node per primary). */
export function primaryShares(shards: number, nodes: number): number[] {
  const used = Math.min(shards, nodes);
  return Array.from({ length: used }, (_, i) => (Math.floor(shards / used) + (i < shards % used ? 1 : 0)) / shards);
}

export interface ShardParallelism {
  /** How many calibration nodes' worth of lock work the deployment does at once: k / E[busiest node's namespaces]. */
  parallelism: number;
  /** Expected namespaces on the busiest node. */
  busiest: number;
  /** What keeps it from more: one namespace, one shard, one node, or how unevenly the hash spreads k namespaces. */
  limit: 'one namespace' | 'one shard' | 'one node' | 'busiest shard';
}

/** The most namespaces the expectation is computed for (a tenth of a second over 64 nodes). */
export const MOST_NAMESPACES = 1024;

/** The shards' parallelism (see the header): P = k / E[namespaces on the busiest node], 1 exactly for one namespace, shard or node. */
export function shardParallelism(deployment: Pick<Deployment, 'shards' | 'namespaces' | 'nodes'>): ShardParallelism {
  const { shards, namespaces, nodes } = deployment;
  if (namespaces <= 1) return { parallelism: 1, busiest: namespaces, limit: 'one namespace' };
  if (shards <= 1) return { parallelism: 1, busiest: namespaces, limit: 'one shard' };
  if (nodes <= 1) return { parallelism: 1, busiest: namespaces, limit: 'one node' };
  // Beyond MOST_NAMESPACES, the figure for that many: more namespaces only even the spread out (k / E[max] grows with k), so a little low.
  const counted = Math.min(namespaces, MOST_NAMESPACES);
  const busiest = (expectedBusiest(counted, primaryShares(shards, nodes)) * namespaces) / counted;
  return { parallelism: namespaces / busiest, busiest, limit: 'busiest shard' };
}

/**
 * The acquire p99 against the offered rate as the probes measured it, made non-decreasing (pool
 * adjacent violators, probes at one rate averaged first): one probe's p99 is about its second-worst
 * sample, so single probes cross each other.
 */
export function p99Trend(curve: readonly P99Point[]): P99Point[] {
  const byRate = new Map<number, number[]>();
  for (const { rate, p99Ms } of curve) byRate.set(rate, [...(byRate.get(rate) ?? []), p99Ms]);
  const blocks: Array<{ rates: number[]; sum: number; weight: number }> = [];
  for (const rate of [...byRate.keys()].sort((a, b) => a - b)) {
    const values = byRate.get(rate)!;
    blocks.push({ rates: [rate], sum: values.reduce((sum, v) => sum + v, 0), weight: values.length });
    while (blocks.length > 1 && blocks.at(-2)!.sum / blocks.at(-2)!.weight > blocks.at(-1)!.sum / blocks.at(-1)!.weight) {
      const last = blocks.pop()!;
      const before = blocks.at(-1)!;
      before.rates.push(...last.rates);
      before.sum += last.sum;
      before.weight += last.weight;
    }
  }
  return blocks.flatMap((block) => block.rates.map((rate) => ({ rate, p99Ms: block.sum / block.weight })));
}

/**
 * The highest rate at which the trend stays within `budgetMs`, interpolated between probes;
 * Infinity when no probe went past it (then something else ended the capacity). Below the lowest
 * probe the p99 is taken as proportional to the rate.
 */
export function rateWithinP99(trend: readonly P99Point[], budgetMs: number): number {
  const first = trend[0];
  if (!first) return Number.POSITIVE_INFINITY;
  if (budgetMs <= 0) return 0;
  if (first.p99Ms > budgetMs) return (first.rate * budgetMs) / first.p99Ms;
  for (let i = 1; i < trend.length; i++) {
    const [low, high] = [trend[i - 1]!, trend[i]!];
    if (high.p99Ms > budgetMs) return low.rate + ((high.rate - low.rate) * (budgetMs - low.p99Ms)) / (high.p99Ms - low.p99Ms);
  }
  return Number.POSITIVE_INFINITY;
}

/**
 * How much longer the p99 takes on the deployment, ms. The p99 operations are the slowest kind or
 * operations waiting behind one (tree at a light load: reads held out by a rename), so the p99 holds
 * one operation of the kind whose requests gain the most there.
 */
export function p99Tail(p99: P99Calibration, deployment: Deployment): { op: string; addedMs: number } {
  return Object.entries(p99.requestsByOp)
    .map(([op, mix]) => ({ op, addedMs: addedMs(mix, deployment) }))
    .reduce((slowest, next) => (next.addedMs > slowest.addedMs ? next : slowest), { op: '-', addedMs: 0 });
}

/**
 * The latency bound. On the deployment the p99 operations take tailAdded longer, leaving that much
 * less of the objective to wait in: the rate falls as the calibration's p99 trend says it does
 * between the objective and the objective less tailAdded (anchored at the calibrated capacity, so
 * with nothing added this is the contention bound). And at a rate there, the locks are as busy as
 * at rate x (hold there / hold here) here.
 */
function p99Bound(calibration: Calibration & { p99: P99Calibration }, deployment: Deployment, holdRatio: number): number {
  const { p99, capacity } = calibration;
  const trend = p99Trend(p99.curve);
  const atObjective = rateWithinP99(trend, p99.objectiveMs);
  const withTail = rateWithinP99(trend, p99.objectiveMs - p99Tail(p99, deployment).addedMs);
  // When no probe crossed the objective, goodput ended the capacity: the trend still says where the shorter budget is crossed.
  const hereRate = Number.isFinite(atObjective) ? (capacity * withTail) / atObjective : Math.min(capacity, withTail);
  return hereRate / holdRatio;
}

export function predict(calibration: Calibration, deployment: Deployment): Prediction {
  const { capacity, esMsPerOp, backoffMsPerOp, criticalSectionMs } = calibration;
  const added = addedMsPerOp(calibration, deployment);
  const operationMs = esMsPerOp + added + backoffMsPerOp + criticalSectionMs;
  const functions = (deployment.functions * 1000) / operationMs;
  // What other operations run into is held per file covered: a directory lock weighs as many files as it holds out.
  const covered = calibration.perCoveredFile ?? { esMsPerOp, requestMix: requestMixOf(calibration) };
  const heldHere = criticalSectionMs + covered.esMsPerOp;
  const heldThere = heldHere + addedMs(covered.requestMix, deployment);
  const holdRatio = heldHere > 0 && heldThere > 0 ? heldThere / heldHere : 1;
  // The calibrated capacity is one primary's; more of them help only as far as the namespaces spread (1 with one namespace or shard).
  const parallelism = shardParallelism(deployment).parallelism;
  const ceiling = capacity * parallelism;
  const held = Math.min(ceiling, ceiling / holdRatio);
  const tail = calibration.p99 ? p99Tail(calibration.p99, deployment) : undefined;
  const p99 = calibration.p99 ? p99Bound({ ...calibration, p99: calibration.p99 }, deployment, holdRatio) * parallelism : Number.POSITIVE_INFINITY;
  const bounds: Array<[Prediction['bound'], number]> = [
    [calibration.granularity === 'global' ? 'serialisation' : 'contention', held],
    ['functions', functions],
    ['p99 tail', p99],
  ];
  // The lowest bound wins; on a tie the earlier one names it.
  const [bound, value] = bounds.reduce((lowest, next) => (next[1] < lowest[1] ? next : lowest));
  return { granularity: calibration.granularity, capacity: value, bound, operationMs, ...(tail ? { tail } : {}) };
}

const ms = (value: number): string => `${value.toFixed(value < 10 ? 1 : 0)} ms`;

/** The shards line of the assumptions: how many, over how many namespaces, and which limit applies. */
function shardsLine(deployment: Deployment): string {
  const { shards, namespaces, nodes, replicas } = deployment;
  const index = `${nodes} Elasticsearch node(s); the lock index has ${shards} primary shard(s) and ${replicas} replica(s); the workload runs in ${namespaces} namespace(s), each on one shard (routing by namespace)`;
  const { parallelism, busiest, limit } = shardParallelism(deployment);
  switch (limit) {
    case 'one namespace':
      return `${index}: one namespace lives on one shard, so ${shards > 1 ? 'more shards' : 'more nodes'} add no lock throughput (the contention bound is one primary's)`;
    case 'one shard':
      return `${index}: one primary shard takes every namespace, so more nodes add no lock throughput (the contention bound is one primary's)`;
    case 'one node':
      return `${index}: every primary on the one node, so more shards add no lock throughput (the contention bound is one node's)`;
    case 'busiest shard':
      return (
        `${index}: the contention bound is ${parallelism.toFixed(2)}x one primary's, k / the expected namespaces on the busiest node ` +
        `(${namespaces} / ${busiest.toFixed(2)}; hashed like balls into bins, at most one primary's worth per node), assuming the primaries spread evenly ` +
        'over the nodes and each has its own CPU and disk, as fast as the calibration node (nodes sharing them gain nothing: 3 shards on the local ' +
        '3-node cluster measured 0.59-0.79 of the 1-shard rate)'
      );
  }
}

export function assumptions(deployment: Deployment): string[] {
  const { addedMs } = deployment;
  return [
    `${deployment.functions} functions, each running one operation at a time (Lambda concurrency); no cold starts`,
    shardsLine(deployment),
    `requests take longer than on the calibration node by: write ${ms(addedMs.write)}, read ${ms(addedMs.read)}, refresh ${ms(addedMs.refresh)}, search ${ms(addedMs.search)} (${deployment.addedMsSource})`,
    'a lock is held for the critical section and the requests around it, averaged over the files locks cover; at the latency objective, rate x hold time stays as calibrated',
    'the key-collision and retry statistics of the workload stay as measured (same workload, same skew)',
  ];
}

/** Relative error of a prediction, e.g. 0.12 for 12% off. */
export const relativeError = (predicted: number, measured: number): number =>
  measured > 0 ? Math.abs(predicted - measured) / measured : Number.POSITIVE_INFINITY;
