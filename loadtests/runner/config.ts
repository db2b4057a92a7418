/**
 * What one load test runs: the settled configuration (defaults, then a JSON file, then --smoke, then
 * flags; see cli.ts and config-file.ts) and the checks that span several settings.
 */
import type { SearchProduct } from '../../functions/store/search-client.js';
import { defaultRetry, defaultSchedule, defaultWorkload, RAMP_PAUSE_S, type Schedule } from '../shared/defaults.js';
import { DEFAULT_OBJECTIVE, type Objective } from '../shared/objective.js';
import { GRANULARITY_NAMES, type Granularity, type RetryPolicy, validateWorkload, type WorkloadConfig } from '../shared/workload.js';
import { DEFAULT_SEARCH, type SearchSettings } from './capacity.js';
import type { UserWorkload } from './user-workload.js';

/** The capacity search per granularity and trial (capacity.ts). */
export interface CapacitySettings {
  enabled: boolean;
  /** Seconds each probe offers its rate. */
  probeS: number;
  objective: Objective;
  search: SearchSettings;
}

export interface LoadtestConfig {
  granularities: Granularity[];
  workloads: WorkloadConfig[];
  schedule: Schedule;
  /** Every granularity is measured this many times, the trials interleaved (1 for --smoke). */
  trials: number;
  capacity: CapacitySettings;
  /** The deployment the report predicts for (model.ts). */
  deployment: { functions: number; nodes: number; shards: number; replicas: number; hopMs: number };
  /** The capacity search on the engine alone (no HTTP), in the first trials only. */
  engine: { enabled: boolean; trials: number; probeS: number };
  retry: RetryPolicy;
  ttlMs: number;
  /** Base URL of a deployed stage; when set nothing is started locally. */
  target?: string;
  /** Sign every request to the target with SigV4 through the kit's signing proxy (--no-sign: plain HTTP). */
  sign: boolean;
  /** The region requests to the target are signed for (--region); default: the target's host, else AWS_REGION. */
  region?: string;
  /** The server of the lock index (--store): the one the local stack starts, or the one ES_URL / OPENSEARCH_URL names with --target. */
  store: SearchProduct;
  /** Results go to <resultsDir>/<timestamp>/. */
  resultsDir: string;
  smoke: boolean;
  /** Write the tree's documents into a data index of the lock store (local mode only). */
  seed: boolean;
  /** The user's own tree and trace (--paths, --from-index, --trace). */
  user?: UserWorkload;
  /** Port for serverless-offline when the stack is started here. */
  port?: number;
  /**
   * Concurrent acquire/release pairs sent before each run to start function instances; 0 disables;
   * undefined: the VU ceiling (each VU has at most one request in flight).
   */
  warmup?: number;
  /** k6's own output (summaries, threshold and warning lines) on the terminal too, not only in k6-<stem>.log (--verbose). */
  verbose?: boolean;
}

export function defaultConfig(): LoadtestConfig {
  return {
    granularities: [...GRANULARITY_NAMES],
    workloads: [defaultWorkload()],
    schedule: defaultSchedule(),
    trials: 3,
    capacity: defaultCapacity(),
    engine: { enabled: true, trials: 1, probeS: 3 },
    deployment: { functions: 50, nodes: 3, shards: 1, replicas: 1, hopMs: 1 },
    retry: defaultRetry(),
    ttlMs: 15_000,
    sign: true,
    store: 'elasticsearch',
    resultsDir: 'results',
    smoke: false,
    seed: true,
  };
}

export function defaultCapacity(): CapacitySettings {
  return { enabled: true, probeS: 5, objective: { ...DEFAULT_OBJECTIVE }, search: { ...DEFAULT_SEARCH } };
}

/** --smoke: one short search (it proves the loop works; its figures mean little). */
export function smokeCapacity(): CapacitySettings {
  return { enabled: true, probeS: 2, objective: { ...DEFAULT_OBJECTIVE }, search: { ...DEFAULT_SEARCH, startRate: 10, maxProbes: 2 } };
}

/** Problems with a configuration, as sentences; empty when it is usable. */
export function validateConfig(config: LoadtestConfig): string[] {
  const problems: string[] = [];
  if (config.granularities.length === 0) problems.push('no granularities selected');
  if (new Set(config.granularities).size !== config.granularities.length) problems.push('a granularity is listed twice');
  if (config.workloads.length === 0) problems.push('no workloads');
  const names = new Set<string>();
  for (const workload of config.workloads) {
    for (const problem of validateWorkload(workload)) problems.push(`workload ${workload.name}: ${problem}`);
    if (names.has(workload.name)) problems.push(`workload name "${workload.name}" is used twice`);
    names.add(workload.name);
  }
  const { steady, ramp, vus } = config.schedule;
  if (!(steady.rate > 0)) problems.push(`steady rate must be > 0 (got ${steady.rate})`);
  if (!Number.isInteger(steady.durationS) || steady.durationS < 1)
    problems.push(`steady duration must be a whole number of seconds >= 1 (got ${steady.durationS})`);
  if (ramp.levels.some((level) => !(level > 0))) problems.push(`ramp levels must be > 0 (got ${ramp.levels.join(', ')})`);
  if (ramp.levels.some((level, i) => i > 0 && level <= ramp.levels[i - 1]!)) problems.push('ramp levels must increase');
  if (ramp.levels.length > 0) {
    if (!Number.isInteger(ramp.stepS) || ramp.stepS < 1) problems.push(`ramp step must be a whole number of seconds >= 1 (got ${ramp.stepS})`);
    if (!Number.isInteger(ramp.transitionS) || ramp.transitionS < 0 || ramp.transitionS >= ramp.stepS) {
      problems.push(`ramp transition must be a whole number of seconds in [0, step) (got ${ramp.transitionS})`);
    }
  }
  if (!Number.isInteger(vus.preAllocated) || vus.preAllocated < 1) problems.push(`vus.preAllocated must be >= 1 (got ${vus.preAllocated})`);
  if (!Number.isInteger(vus.max) || vus.max < vus.preAllocated) problems.push(`vus.max must be >= vus.preAllocated (got ${vus.max})`);
  if (!(config.retry.budgetMs >= 0)) problems.push(`retry budget must be >= 0 (got ${config.retry.budgetMs})`);
  if (!(config.retry.baseDelayMs >= 1) || !(config.retry.maxDelayMs >= config.retry.baseDelayMs)) {
    problems.push('retry delays need 1 <= baseDelayMs <= maxDelayMs');
  }
  if (!Number.isInteger(config.trials) || config.trials < 1 || config.trials > 20) problems.push(`trials must be 1..20 (got ${config.trials})`);
  const { capacity } = config;
  if (!Number.isInteger(capacity.probeS) || capacity.probeS < 1 || capacity.probeS > 120)
    problems.push(`probe seconds must be 1..120 (got ${capacity.probeS})`);
  if (!(capacity.objective.p99Ms > 0)) problems.push(`the p99 objective must be > 0 ms (got ${capacity.objective.p99Ms})`);
  if (!(capacity.search.startRate >= 1) || !(capacity.search.maxRate >= capacity.search.startRate)) {
    problems.push(`capacity search rates need 1 <= start (${capacity.search.startRate}) <= max (${capacity.search.maxRate})`);
  }
  const { deployment } = config;
  if (!Number.isInteger(deployment.functions) || deployment.functions < 1)
    problems.push(`--functions must be a whole number >= 1 (got ${deployment.functions})`);
  if (!Number.isInteger(deployment.nodes) || deployment.nodes < 1) problems.push(`--nodes must be a whole number >= 1 (got ${deployment.nodes})`);
  if (!Number.isInteger(deployment.shards) || deployment.shards < 1) problems.push(`--shards must be a whole number >= 1 (got ${deployment.shards})`);
  if (!Number.isInteger(deployment.replicas) || deployment.replicas < 0 || deployment.replicas > deployment.nodes - 1) {
    problems.push(`--replicas must be a whole number in 0..nodes-1 (got ${deployment.replicas} with ${deployment.nodes} nodes)`);
  }
  if (!(deployment.hopMs >= 0)) problems.push(`--hop-ms must be >= 0 (got ${deployment.hopMs})`);
  if (!Number.isInteger(config.ttlMs) || config.ttlMs < 1000 || config.ttlMs > 900_000) problems.push(`ttlMs must be in 1000..900000 (got ${config.ttlMs})`);
  if (config.warmup !== undefined && (!Number.isInteger(config.warmup) || config.warmup < 0 || config.warmup > 500))
    problems.push(`warmup must be 0..500 (got ${config.warmup})`);
  if (config.target === undefined && config.region !== undefined)
    problems.push('--region: only with --target (it is the region requests to the stage are signed for)');
  if (config.target !== undefined && !/^https?:\/\/\S+$/.test(config.target)) problems.push(`--target "${config.target}" is not an http(s) URL`);
  return problems;
}

/** Warm-up concurrency: as many as k6 can have requests in flight, unless set. */
export function warmupConcurrency(config: LoadtestConfig): number {
  return config.warmup ?? config.schedule.vus.max;
}

/** Seconds k6 takes to start, check the service and write its summary, on top of the schedule (measured here: 0.5-1.5 s). */
export const K6_RUN_OVERHEAD_S = 1.5;

/**
 * Probes a capacity search runs: a first trial ramps up from the start rate and bisects; later
 * trials check an earlier bracket's two ends and narrow it. Used for the time estimate only.
 */
export function expectedProbes(config: LoadtestConfig, trial: number): number {
  if (!config.capacity.enabled) return 0;
  return Math.min(config.capacity.search.maxProbes, trial === 1 ? 8 : 3);
}

/** Seconds the whole run should take (k6 only; the stack's start and the seeding come on top). */
export function plannedSeconds(config: LoadtestConfig): number {
  const probeS = config.capacity.probeS + 1 + K6_RUN_OVERHEAD_S;
  const steadyS = granularitySeconds(config.schedule) + K6_RUN_OVERHEAD_S;
  let total = 0;
  for (let trial = 1; trial <= config.trials; trial++)
    total += config.workloads.length * config.granularities.length * (steadyS + expectedProbes(config, trial) * probeS);
  if (runsEngineSearch(config, 1)) total += config.engine.trials * config.workloads.length * config.granularities.length * plannedEngineSearchSeconds(config);
  return total;
}

/** The engine-only layer searches once per granularity and workload in each of its trials (the first ones). */
export const runsEngineSearch = (config: LoadtestConfig, trial: number): boolean =>
  config.engine.enabled && config.capacity.enabled && trial <= config.engine.trials;

/** Seconds one engine-only search should take: about 9 probes, no k6 start-up. */
export const plannedEngineSearchSeconds = (config: LoadtestConfig): number => 9 * (config.engine.probeS + 0.5);

/** Seconds one granularity run takes by the schedule (k6 start-up not included). */
export function granularitySeconds(schedule: Schedule): number {
  const ramp = schedule.ramp.levels.length > 0 ? RAMP_PAUSE_S + schedule.ramp.levels.length * schedule.ramp.stepS : 0;
  return schedule.steady.durationS + ramp + schedule.gracefulStopS;
}
