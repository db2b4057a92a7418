/**
 * What a strategy would do in the deployment the user runs, from what was measured here. Pure.
 *
 * Calibration (the engine-only layer on one local node): the strategy's capacity, the Elasticsearch
 * requests of one operation by kind, time per operation spent in Elasticsearch and in backoff at a
 * light load, the critical section.
 *
 * Deployment: N concurrent functions (one operation at a time each) against a cluster whose lock
 * index has one primary shard, described by how much longer each kind of request takes there than
 * on the calibration node (measured by `npm run loadtest:model`, else one hop per replicated write
 * and refresh). Two bounds, the lower wins:
 *   - functions: N / (time in Elasticsearch + backoff + critical section);
 *   - contention (serialisation for global, one lock): a lock is held for the critical section and
 *     the requests around it, and at the latency objective the rate times that hold stays what it
 *     was on the calibration node (exactly so for global, where each operation waits for the one
 *     before) - so longer requests leave proportionally less capacity. The hold is averaged per file
 *     covered, not per operation: a rename's lock over 40 files is what 40 edits run into, and a
 *     tree directory lock's refresh and search, much slower on a replicated index, weigh that much.
 *     Never above the calibrated capacity: the one primary shard does the same work as the single
 *     node did.
 * An earlier version charged co-located replicas their writes' CPU instead; warmed-up clusters
 * showed no such cost at these rates (document 160-175 ops/s on both). Known short: tree's slowdown on
 * the local 3-node cluster is larger than this predicts (27-63% over in the checks), its directory
 * locks' refresh and search under load costing more than the idle per-kind latency says.
 */

export const REQUEST_KINDS = ['write', 'read', 'refresh', 'search'] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];
export type PerKind = Record<RequestKind, number>;

/** A figure for each kind of request. */
export const perKind = (value: (kind: RequestKind) => number): PerKind =>
  ({ write: value('write'), read: value('read'), refresh: value('refresh'), search: value('search') }) satisfies PerKind;

export const noRequests = (): PerKind => perKind(() => 0);

export interface Calibration {
  strategy: string;
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
}

export interface Deployment {
  functions: number;
  nodes: number;
  replicas: number;
  /** How much longer each kind of request takes on the deployment than on the calibration node, ms. */
  addedMs: PerKind;
  /** Where addedMs comes from, for the assumptions. */
  addedMsSource: string;
}

export interface Prediction {
  strategy: string;
  capacity: number;
  bound: 'functions' | 'contention' | 'serialisation';
  /** Time of one operation in a function at a light load, ms (acquire + release + critical section + backoff). */
  operationMs: number;
}

/** The deployment the report predicts when nothing was measured on it: a replicated write or refresh waits one more hop. */
export function deploymentFromHop(options: { functions: number; nodes: number; replicas: number; hopMs: number }): Deployment {
  const hop = options.replicas > 0 ? options.hopMs : 0;
  return {
    functions: options.functions,
    nodes: options.nodes,
    replicas: options.replicas,
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

export function predict(calibration: Calibration, deployment: Deployment): Prediction {
  const { capacity, esMsPerOp, backoffMsPerOp, criticalSectionMs } = calibration;
  const added = addedMsPerOp(calibration, deployment);
  const operationMs = esMsPerOp + added + backoffMsPerOp + criticalSectionMs;
  const functions = (deployment.functions * 1000) / operationMs;
  // What other operations run into is held per file covered: a directory lock weighs as many files as it holds out.
  const covered = calibration.perCoveredFile ?? { esMsPerOp, requestMix: requestMixOf(calibration) };
  const heldHere = criticalSectionMs + covered.esMsPerOp;
  const heldThere = heldHere + addedMs(covered.requestMix, deployment);
  const held = Math.min(capacity, heldThere > 0 ? (capacity * heldHere) / heldThere : capacity);
  const heldBound: Prediction['bound'] = calibration.strategy === 'global' ? 'serialisation' : 'contention';
  const [bound, value] = held <= functions ? [heldBound, held] : (['functions', functions] as const);
  return { strategy: calibration.strategy, capacity: value, bound, operationMs };
}

const ms = (value: number): string => `${value.toFixed(value < 10 ? 1 : 0)} ms`;

export function assumptions(deployment: Deployment): string[] {
  const { addedMs } = deployment;
  return [
    `${deployment.functions} functions, each running one operation at a time (Lambda concurrency); no cold starts`,
    `${deployment.nodes} Elasticsearch node(s); the lock index has one primary shard and ${deployment.replicas} replica(s), so more nodes add no lock throughput`,
    `requests take longer than on the calibration node by: write ${ms(addedMs.write)}, read ${ms(addedMs.read)}, refresh ${ms(addedMs.refresh)}, search ${ms(addedMs.search)} (${deployment.addedMsSource})`,
    'a lock is held for the critical section and the requests around it, averaged over the files locks cover; at the latency objective, rate x hold time stays as calibrated',
    'the key-collision and retry statistics of the workload stay as measured (same workload, same skew)',
  ];
}

/** Relative error of a prediction, e.g. 0.12 for 12% off. */
export const relativeError = (predicted: number, measured: number): number =>
  measured > 0 ? Math.abs(predicted - measured) / measured : Number.POSITIVE_INFINITY;
