/**
 * Load-test configuration: defaults, then a JSON file (--config), then --smoke, then flags.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  defaultRetry,
  defaultSchedule,
  defaultWorkload,
  RAMP_PAUSE_S,
  smokeSchedule,
  type Schedule,
} from '../../loadtests/lib/defaults.js';
import {
  STRATEGIES,
  validateWorkload,
  type Mix,
  type RetryPolicy,
  type Skew,
  type Strategy,
  type WorkloadConfig,
} from '../../loadtests/lib/workload.js';

export interface LoadtestConfig {
  strategies: Strategy[];
  workloads: WorkloadConfig[];
  schedule: Schedule;
  retry: RetryPolicy;
  ttlMs: number;
  /** Base URL of a deployed stage; when set nothing is started locally. */
  target?: string;
  /** Results go to <resultsDir>/<timestamp>/. */
  resultsDir: string;
  smoke: boolean;
  /** Write the tree's documents into an Elasticsearch data index (local mode only). */
  seed: boolean;
  /** Port for serverless-offline when the stack is started here. */
  port?: number;
  /**
   * Concurrent acquire/release pairs sent before each run to start function instances; 0 disables;
   * undefined: the VU ceiling (each VU has at most one request in flight).
   */
  warmup?: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K] };

/** Shape of the --config JSON file. `workload` is merged into every entry of `workloads`. */
export interface ConfigFile {
  strategies?: Strategy[];
  workload?: DeepPartial<WorkloadConfig>;
  workloads?: Array<DeepPartial<WorkloadConfig>>;
  steady?: Partial<Schedule['steady']>;
  ramp?: Partial<Schedule['ramp']>;
  vus?: Partial<Schedule['vus']>;
  gracefulStopS?: number;
  retry?: Partial<RetryPolicy>;
  ttlMs?: number;
  target?: string;
  resultsDir?: string;
  seed?: boolean;
  port?: number;
  warmup?: number;
}

export const USAGE = `usage: npm run loadtest -- [options]

Runs the k6 lock workload once per strategy (global, document, tree) with the same offered load,
checks every critical section for safety, and writes results/<timestamp>/ (report.md, report.html,
goodput.svg, k6 summaries). Without --target it starts Elasticsearch and serverless-offline itself.

  --config FILE        JSON file with any of: strategies, workload, workloads[], steady, ramp, vus,
                       retry, ttlMs, target, resultsDir, seed, port, warmup (flags override it)
  --target URL         run against a deployed stage; start nothing
  --smoke              a few seconds per strategy (what CI runs)
  --strategies LIST    e.g. global,document,tree
  --rate N             steady offered load, operations/s (default ${defaultSchedule().steady.rate})
  --duration S         steady phase length in seconds (default ${defaultSchedule().steady.durationS})
  --levels LIST        ramp levels in operations/s, e.g. 20,40,80,160; "none" skips the ramp
  --step S             seconds per ramp level (default ${defaultSchedule().ramp.stepS})
  --max-vus N          k6 VU ceiling per scenario (default ${defaultSchedule().vus.max})
  --depth N --fanout N --files N --tree-seed N
                       tree shape: directory levels, subdirectories per directory, files per directory
  --mix R/E/N          weights of read/edit/rename, e.g. 70/25/5 or read=70,edit=25,rename=5
  --cs-ms N            critical-section time in ms (default ${defaultWorkload().criticalSectionMs})
  --skew S             uniform | zipf[:s] | hotspot[:hotFraction:hotTraffic] (default hotspot:0.1:0.9)
  --budget-ms N        per-operation retry budget (default ${defaultRetry().budgetMs})
  --ttl-ms N           lease TTL (default 15000)
  --results DIR        base folder for results (default results)
  --port N             serverless-offline port when started here
  --warmup N           concurrent acquire/release pairs that warm the functions before each run
                       (default: --max-vus; 0 disables)
  --no-seed            do not write the tree into an Elasticsearch data index
  --help`;

export function parseMix(text: string): Mix {
  const named = /^\s*read\s*=\s*([\d.]+)\s*,\s*edit\s*=\s*([\d.]+)\s*,\s*rename\s*=\s*([\d.]+)\s*$/i.exec(text);
  const positional = /^\s*([\d.]+)\s*[/,:]\s*([\d.]+)\s*[/,:]\s*([\d.]+)\s*$/.exec(text);
  const match = named ?? positional;
  if (!match) throw new ConfigError(`--mix "${text}": expected read/edit/rename weights such as 70/25/5 or read=70,edit=25,rename=5`);
  return { read: Number(match[1]), edit: Number(match[2]), rename: Number(match[3]) };
}

export function parseSkew(text: string): Skew {
  const [kind, ...rest] = text.trim().split(':');
  const numbers = rest.map(Number);
  if (kind === 'uniform' && rest.length === 0) return { kind: 'uniform' };
  if (kind === 'zipf' && rest.length <= 1) return { kind: 'zipf', s: numbers[0] ?? 1 };
  if ((kind === 'hotspot' || kind === 'hot') && (rest.length === 0 || rest.length === 2)) {
    return { kind: 'hotspot', hotFraction: numbers[0] ?? 0.1, hotTraffic: numbers[1] ?? 0.9 };
  }
  throw new ConfigError(`--skew "${text}": expected uniform, zipf[:s] or hotspot[:hotFraction:hotTraffic]`);
}

function parseNumber(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value)) throw new ConfigError(`--${flag} "${text}" is not a number`);
  return value;
}

function parseLevels(text: string): number[] {
  if (text.trim() === '' || text.trim() === 'none') return [];
  return text.split(',').map((part) => parseNumber('levels', part));
}

function mergeWorkload(base: WorkloadConfig, patch: DeepPartial<WorkloadConfig> | undefined): WorkloadConfig {
  if (!patch) return base;
  return {
    name: patch.name ?? base.name,
    tree: { ...base.tree, ...patch.tree },
    mix: { ...base.mix, ...patch.mix },
    criticalSectionMs: patch.criticalSectionMs ?? base.criticalSectionMs,
    skew: (patch.skew as Skew | undefined) ?? base.skew,
  };
}

export function defaultConfig(): LoadtestConfig {
  return {
    strategies: [...STRATEGIES],
    workloads: [defaultWorkload()],
    schedule: defaultSchedule(),
    retry: defaultRetry(),
    ttlMs: 15_000,
    resultsDir: 'results',
    smoke: false,
    seed: true,
  };
}

export function applyConfigFile(config: LoadtestConfig, file: ConfigFile): LoadtestConfig {
  const next: LoadtestConfig = structuredClone(config);
  if (file.strategies) next.strategies = file.strategies;
  const base = mergeWorkload(next.workloads[0] ?? defaultWorkload(), file.workload);
  next.workloads = file.workloads?.length
    ? file.workloads.map((patch, index) => mergeWorkload({ ...base, name: patch.name ?? `w${index + 1}` }, patch))
    : [base];
  next.schedule = {
    steady: { ...next.schedule.steady, ...file.steady },
    ramp: { ...next.schedule.ramp, ...file.ramp },
    vus: { ...next.schedule.vus, ...file.vus },
    gracefulStopS: file.gracefulStopS ?? next.schedule.gracefulStopS,
  };
  next.retry = { ...next.retry, ...file.retry };
  if (file.ttlMs !== undefined) next.ttlMs = file.ttlMs;
  if (file.target !== undefined) next.target = file.target;
  if (file.resultsDir !== undefined) next.resultsDir = file.resultsDir;
  if (file.seed !== undefined) next.seed = file.seed;
  if (file.port !== undefined) next.port = file.port;
  if (file.warmup !== undefined) next.warmup = file.warmup;
  return next;
}

/** Problems with a configuration, as sentences; empty when it is usable. */
export function validateConfig(config: LoadtestConfig): string[] {
  const problems: string[] = [];
  if (config.strategies.length === 0) problems.push('no strategies selected');
  for (const strategy of config.strategies) {
    if (!STRATEGIES.includes(strategy)) problems.push(`unknown strategy "${strategy}" (use ${STRATEGIES.join(', ')})`);
  }
  if (new Set(config.strategies).size !== config.strategies.length) problems.push('a strategy is listed twice');
  if (config.workloads.length === 0) problems.push('no workloads');
  const names = new Set<string>();
  for (const workload of config.workloads) {
    for (const problem of validateWorkload(workload)) problems.push(`workload ${workload.name}: ${problem}`);
    if (names.has(workload.name)) problems.push(`workload name "${workload.name}" is used twice`);
    names.add(workload.name);
  }
  const { steady, ramp, vus } = config.schedule;
  if (!(steady.rate > 0)) problems.push(`steady rate must be > 0 (got ${steady.rate})`);
  if (!Number.isInteger(steady.durationS) || steady.durationS < 1) problems.push(`steady duration must be a whole number of seconds >= 1 (got ${steady.durationS})`);
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
  if (!Number.isInteger(config.ttlMs) || config.ttlMs < 1000 || config.ttlMs > 900_000) problems.push(`ttlMs must be in 1000..900000 (got ${config.ttlMs})`);
  if (config.warmup !== undefined && (!Number.isInteger(config.warmup) || config.warmup < 0 || config.warmup > 500)) problems.push(`warmup must be 0..500 (got ${config.warmup})`);
  if (config.target !== undefined && !/^https?:\/\/\S+$/.test(config.target)) problems.push(`--target "${config.target}" is not an http(s) URL`);
  return problems;
}

/** Warm-up concurrency: as many as k6 can have requests in flight, unless set. */
export function warmupConcurrency(config: LoadtestConfig): number {
  return config.warmup ?? config.schedule.vus.max;
}

/** Seconds one strategy run takes by the schedule (k6 start-up not included). */
export function strategySeconds(schedule: Schedule): number {
  const ramp = schedule.ramp.levels.length > 0 ? RAMP_PAUSE_S + schedule.ramp.levels.length * schedule.ramp.stepS : 0;
  return schedule.steady.durationS + ramp + schedule.gracefulStopS;
}

export function parseCli(argv: string[]): { config: LoadtestConfig; help: boolean } {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      config: { type: 'string' },
      target: { type: 'string' },
      smoke: { type: 'boolean' },
      strategies: { type: 'string' },
      rate: { type: 'string' },
      duration: { type: 'string' },
      levels: { type: 'string' },
      step: { type: 'string' },
      'max-vus': { type: 'string' },
      depth: { type: 'string' },
      fanout: { type: 'string' },
      files: { type: 'string' },
      'tree-seed': { type: 'string' },
      mix: { type: 'string' },
      'cs-ms': { type: 'string' },
      skew: { type: 'string' },
      'budget-ms': { type: 'string' },
      'ttl-ms': { type: 'string' },
      results: { type: 'string' },
      port: { type: 'string' },
      'no-seed': { type: 'boolean' },
      warmup: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  let config = defaultConfig();
  if (values.config) {
    let file: ConfigFile;
    try {
      file = JSON.parse(readFileSync(values.config, 'utf8')) as ConfigFile;
    } catch (error) {
      throw new ConfigError(`--config ${values.config}: ${(error as Error).message}`);
    }
    config = applyConfigFile(config, file);
  }
  if (values.smoke) {
    config.smoke = true;
    config.schedule = smokeSchedule();
  }
  const num = (flag: string, text: string | undefined): number | undefined => (text === undefined ? undefined : parseNumber(flag, text));
  if (values.target !== undefined) config.target = values.target.replace(/\/+$/, '');
  if (values.strategies !== undefined) config.strategies = values.strategies.split(',').map((s) => s.trim()) as Strategy[];
  const rate = num('rate', values.rate);
  if (rate !== undefined) config.schedule.steady.rate = rate;
  const duration = num('duration', values.duration);
  if (duration !== undefined) config.schedule.steady.durationS = duration;
  if (values.levels !== undefined) config.schedule.ramp.levels = parseLevels(values.levels);
  const step = num('step', values.step);
  if (step !== undefined) {
    config.schedule.ramp.stepS = step;
    config.schedule.ramp.transitionS = Math.min(config.schedule.ramp.transitionS, Math.max(0, step - 1));
  }
  const maxVus = num('max-vus', values['max-vus']);
  if (maxVus !== undefined) {
    config.schedule.vus.max = maxVus;
    config.schedule.vus.preAllocated = Math.min(config.schedule.vus.preAllocated, maxVus);
  }
  const depth = num('depth', values.depth);
  const fanout = num('fanout', values.fanout);
  const files = num('files', values.files);
  const treeSeed = num('tree-seed', values['tree-seed']);
  const cs = num('cs-ms', values['cs-ms']);
  const mix = values.mix === undefined ? undefined : parseMix(values.mix);
  const skew = values.skew === undefined ? undefined : parseSkew(values.skew);
  config.workloads = config.workloads.map((workload) => ({
    ...workload,
    tree: {
      depth: depth ?? workload.tree.depth,
      fanout: fanout ?? workload.tree.fanout,
      filesPerDir: files ?? workload.tree.filesPerDir,
      seed: treeSeed ?? workload.tree.seed,
    },
    mix: mix ?? workload.mix,
    criticalSectionMs: cs ?? workload.criticalSectionMs,
    skew: skew ?? workload.skew,
  }));
  const budget = num('budget-ms', values['budget-ms']);
  if (budget !== undefined) config.retry.budgetMs = budget;
  const ttl = num('ttl-ms', values['ttl-ms']);
  if (ttl !== undefined) config.ttlMs = ttl;
  if (values.results !== undefined) config.resultsDir = values.results;
  const port = num('port', values.port);
  if (port !== undefined) config.port = port;
  if (values['no-seed']) config.seed = false;
  const warmup = num('warmup', values.warmup);
  if (warmup !== undefined) config.warmup = warmup;
  const problems = validateConfig(config);
  if (problems.length > 0 && !values.help) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return { config, help: values.help ?? false };
}

/** One line per workload for logs and reports, e.g. "read/edit/rename 70/25/5, cs 20 ms, hotspot 10%->90%, 156 files". */
export function describeSkew(skew: Skew): string {
  if (skew.kind === 'uniform') return 'uniform';
  if (skew.kind === 'zipf') return `zipf s=${skew.s}`;
  return `hot spot: ${Math.round(skew.hotFraction * 100)}% of targets get ${Math.round(skew.hotTraffic * 100)}% of traffic`;
}

export function mixPercentages(mix: Mix): { read: number; edit: number; rename: number } {
  const total = mix.read + mix.edit + mix.rename;
  const pct = (value: number): number => Math.round((value / total) * 1000) / 10;
  return { read: pct(mix.read), edit: pct(mix.edit), rename: pct(mix.rename) };
}
