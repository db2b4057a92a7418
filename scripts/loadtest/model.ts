/**
 * What a strategy would do in the deployment the user runs, from what was measured here. Pure.
 *
 * Calibration (the engine-only layer on one local node): the strategy's capacity, Elasticsearch
 * requests per operation and the share that are writes, time per operation spent in Elasticsearch
 * and in backoff at a light load, the critical section.
 *
 * Deployment: N concurrent functions (one operation at a time each) against a k-node cluster whose
 * lock index has one primary shard and r replicas. Three bounds, the lowest wins:
 *   - functions: N / (time in Elasticsearch + backoff + critical section + one replica hop per write);
 *   - lock index: the calibrated capacity, scaled by the CPU the writes' replicas take where the nodes
 *     share the machine (the local validation cluster) - on dedicated nodes replicas run elsewhere and
 *     the one primary shard does the same work as the single node did;
 *   - serialisation (global only: one lock, every operation waits for the one before): each
 *     replicated write's extra hop lengthens every handoff.
 */

export interface Calibration {
  strategy: string;
  /** Engine-only capacity on the single node, ops/s. */
  capacity: number;
  requestsPerOp: number;
  /** Writes / requests. */
  writeShare: number;
  /** Per operation at a light load, ms. */
  esMsPerOp: number;
  backoffMsPerOp: number;
  criticalSectionMs: number;
}

export interface Deployment {
  functions: number;
  nodes: number;
  replicas: number;
  /** The nodes share one machine's CPUs (the local validation cluster), so replica writes compete with the primary. */
  colocated: boolean;
  /** Extra latency of a replicated write (primary to replica and back), ms. */
  hopMs: number;
}

export interface Prediction {
  strategy: string;
  capacity: number;
  bound: 'functions' | 'lock index' | 'serialisation';
  /** Time of one operation in a function at a light load, ms (acquire + release + critical section + backoff). */
  operationMs: number;
}

export function predict(calibration: Calibration, deployment: Deployment): Prediction {
  const { capacity, requestsPerOp, writeShare, esMsPerOp, backoffMsPerOp, criticalSectionMs } = calibration;
  const writesPerOp = requestsPerOp * writeShare;
  const replicaHopMs = deployment.replicas > 0 ? writesPerOp * deployment.hopMs : 0;
  const operationMs = esMsPerOp + replicaHopMs + backoffMsPerOp + criticalSectionMs;
  const functions = (deployment.functions * 1000) / operationMs;
  const cpuFactor = deployment.colocated ? 1 + writeShare * deployment.replicas : 1;
  const lockIndex = capacity / cpuFactor;
  const serialised = calibration.strategy === 'global' ? 1000 / (1000 / capacity + replicaHopMs) : Number.POSITIVE_INFINITY;
  const bounds: Array<[Prediction['bound'], number]> = [
    ['functions', functions],
    ['lock index', lockIndex],
    ['serialisation', serialised],
  ];
  const [bound, value] = bounds.reduce((low, next) => (next[1] < low[1] ? next : low));
  return { strategy: calibration.strategy, capacity: value, bound, operationMs };
}

export function assumptions(deployment: Deployment): string[] {
  return [
    `${deployment.functions} functions, each running one operation at a time (Lambda concurrency); no cold starts`,
    `${deployment.nodes} Elasticsearch node(s); the lock index has one primary shard and ${deployment.replicas} replica(s), so more nodes add no lock throughput`,
    deployment.colocated
      ? 'the nodes share one machine: a replica repeats each write on the same CPUs'
      : 'dedicated nodes: replicas repeat writes on other machines; each replicated write waits one more hop',
    `a replicated write costs ${deployment.hopMs} ms more; reads (realtime gets, searches) go to the primary`,
    'the key-collision and retry statistics of the workload stay as measured (same workload, same skew)',
  ];
}

/** Relative error of a prediction, e.g. 0.12 for 12% off. */
export const relativeError = (predicted: number, measured: number): number =>
  measured > 0 ? Math.abs(predicted - measured) / measured : Number.POSITIVE_INFINITY;
