/**
 * The command line of `npm run loadtest`: flags read with node's parseArgs, their values checked and
 * converted by zod, then laid over the defaults and the --config file.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { chooseStore, STORE_RULE } from '../../infra/lib/store-target.js';
import { describeRule, joinNegativeValues, meetsRule, type NumberRule, usageErrorFromParseArgs } from '../../tools/cli/flags.js';
import { defaultRetry, defaultSchedule, defaultWorkload, smokeSchedule } from '../shared/defaults.js';
import { DEFAULT_OBJECTIVE } from '../shared/objective.js';
import { type Granularity, type Mix, mixWeights, type Skew, type WorkloadConfig } from '../shared/workload.js';
import { DEFAULT_SEARCH } from './capacity.js';
import { defaultCapacity, defaultConfig, type LoadtestConfig, smokeCapacity, validateConfig } from './config.js';
import { ConfigError, configErrorFrom } from './config-error.js';
import { applyConfigFile, readConfigFile, targetSchema } from './config-file.js';
import { givenGranularities, readGranularities } from './granularity-flag.js';
import { checkUserWorkload, readPathsFile, readTraceFile, type UserWorkload } from './user-workload.js';

export const USAGE = `usage: npm run loadtest -- [options]

Runs the k6 lock workload under each granularity (global, document, tree): the expected rate, then a
search for the capacity (the highest rate meeting the latency objective), in --trials interleaved
trials; checks every critical section for safety, and writes results/<timestamp>/ (report.md,
report.html, charts, k6 summaries and k6's output as k6-<run>.log). Without --target it starts the lock store (--store) and
serverless-offline. The defaults take about 8 minutes here.

  --config FILE        JSON file with any of: granularities, workload, workloads[], steady, ramp, vus,
                       retry, ttlMs, target, resultsDir, seed, port, warmup (flags override it)
  --target URL         run against a deployed stage; start nothing. Every request is signed with SigV4
                       (execute-api) from your AWS credential chain, through a local signing proxy;
                       reachability and permissions are checked before any k6 run
  --region R           the region to sign for (default: the target's execute-api.<region> host, else AWS_REGION)
  --no-sign            send plain HTTP to the target (a stage without IAM authorization)
  --store S            ${STORE_RULE}
  --smoke              a few seconds per granularity (what CI runs)
  --granularities LIST e.g. global,document,tree (also --strategies)
  --rate N             expected offered load, operations/s (default ${defaultSchedule().steady.rate})
  --duration S         seconds at the expected rate (default ${defaultSchedule().steady.durationS})
  --trials N           trials per granularity; figures are medians with ranges (default 3; --smoke: 1)
  --slo-p99 MS         capacity objective: acquire p99 at most this (default ${DEFAULT_OBJECTIVE.p99Ms})
  --probe-seconds S    length of each capacity probe (default ${defaultCapacity().probeS})
  --max-rate N         highest rate the capacity search tries (default ${DEFAULT_SEARCH.maxRate})
  --no-search          skip the capacity search (only the expected rate)
  --no-engine          skip the engine-only layer (the same search without HTTP, in trial 1)
  --functions N --nodes K --shards S --replicas R --hop-ms MS
                       the deployment the report predicts for: N concurrent functions, a K-node
                       cluster, S primary shards and R replicas of the lock index, MS more per
                       replicated write or refresh (default 50, 3, 1, 1, 1); the kit's workload runs in
                       one namespace, which lives on one shard, so S changes none of its predictions
  --levels LIST        optional fixed ramp after the expected rate, e.g. 20,40,80; "none" skips it
  --step S             seconds per ramp level (default ${defaultSchedule().ramp.stepS})
  --max-vus N          k6 VU ceiling per scenario (default ${defaultSchedule().vus.max})
  --depth N --fanout N --files N --tree-seed N
                       tree shape: directory levels, subdirectories per directory, files per directory
  --mix R/E/N[/C/D]    weights of read/edit/rename/create/delete, e.g. 67/23/5/3/2 or
                       read=70,edit=25,rename=5,create=3 (default 67/23/5/3/2)
  --paths FILE         your tree: one absolute path per line (files; directories are their ancestors)
  --from-index NAME    your tree from an index of the lock store (ES_URL, OPENSEARCH_URL, or the local node) ...
  --path-field FIELD   ... and the field of its documents that holds the path (default path)
  --max-paths N        read at most this many paths (default 20000)
  --trace FILE         replay your operations: JSON lines {"op":"edit","target":"/a/b.txt","time":12.5}
                       (op read|edit|rename|create|delete, time in seconds or ISO-8601)
  --trace-speed X      replay X times as fast as recorded (default 1)
  --renames LIST       one workload per directory-rename share, e.g. 2,10,30 (percent; reads and
                       the other operations keep their proportion): the report says where the winner flips
  --cs-ms N            critical-section time in ms (default ${defaultWorkload().criticalSectionMs})
  --skew S             uniform | zipf[:s] | hotspot[:hotFraction:hotTraffic] (default hotspot:0.1:0.9)
  --budget-ms N        per-operation retry budget (default ${defaultRetry().budgetMs})
  --ttl-ms N           lease TTL (default 15000)
  --results DIR        base folder for results (default results)
  --port N             serverless-offline port when started here
  --warmup N           concurrent acquire/release pairs that warm the functions before each run
                       (default: --max-vus; 0 disables)
  --no-seed            do not write the tree into a data index of the lock store
  --verbose            print k6's own output too (its end-of-test summaries, threshold and warning
                       lines; otherwise only in k6-<run>.log in the results folder), and stack
                       traces on errors (these also with DEBUG=1)
  --help

Exit codes: 0 all safe and passing, 1 a failure (safety violation, failed threshold, a service that
does not answer), 2 a usage mistake, 130 interrupted.`;

const MIX_HINT = 'expected read/edit/rename[/create/delete] weights such as 67/23/5/3/2 or read=70,edit=25,rename=5,create=3';
const SKEW_HINT = 'expected uniform, zipf[:s] or hotspot[:hotFraction:hotTraffic]';

/** "70/25/5" or "67/23/5/3/2" (read/edit/rename[/create/delete]), or "read=70,edit=25,rename=5,create=3". */
function readMix(text: string): Mix | undefined {
  const number = /^\s*\d+(\.\d+)?\s*$/;
  const positional = text.split(/[/:]/);
  if (positional.length === 3 || positional.length === 5) {
    if (!positional.every((part) => number.test(part))) return undefined;
    const [read, edit, rename, create, remove] = positional.map(Number);
    return { read: read!, edit: edit!, rename: rename!, ...(create !== undefined ? { create, delete: remove! } : {}) };
  }
  const named: Record<string, number> = {};
  for (const part of text.split(',')) {
    const match = /^\s*(read|edit|rename|create|delete)\s*=\s*(\d+(?:\.\d+)?)\s*$/i.exec(part);
    if (!match || named[match[1]!.toLowerCase()] !== undefined) return undefined;
    named[match[1]!.toLowerCase()] = Number(match[2]);
  }
  return { read: named.read ?? 0, edit: named.edit ?? 0, rename: named.rename ?? 0, create: named.create ?? 0, delete: named.delete ?? 0 };
}

function readSkew(text: string): Skew | undefined {
  const [kind, ...rest] = text.trim().split(':');
  const numbers = rest.map(Number);
  if (kind === 'uniform' && rest.length === 0) return { kind: 'uniform' };
  if (kind === 'zipf' && rest.length <= 1) return { kind: 'zipf', s: numbers[0] ?? 1 };
  if ((kind === 'hotspot' || kind === 'hot') && (rest.length === 0 || rest.length === 2)) {
    return { kind: 'hotspot', hotFraction: numbers[0] ?? 0.1, hotTraffic: numbers[1] ?? 0.9 };
  }
  return undefined;
}

function readNumber(text: string): number | undefined {
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

function readLevels(text: string): number[] | undefined {
  if (text.trim() === '' || text.trim() === 'none') return [];
  const levels = text.split(',').map(readNumber);
  return levels.every((level) => level !== undefined) ? (levels as number[]) : undefined;
}

export function parseMix(text: string): Mix {
  const mix = readMix(text);
  if (!mix) throw new ConfigError(`--mix "${text}": ${MIX_HINT}`);
  return mix;
}

export function parseSkew(text: string): Skew {
  const skew = readSkew(text);
  if (!skew) throw new ConfigError(`--skew "${text}": ${SKEW_HINT}`);
  return skew;
}

/** A flag whose text `read` turns into a value, or into an issue saying `hint`. */
function flagValue<T>(read: (text: string) => T | undefined, hint: string) {
  return z.string().transform((text, ctx): T => {
    const value = read(text);
    if (value === undefined) ctx.addIssue({ code: 'custom', message: `${hint} (got "${text}")` });
    return value as T;
  });
}

/** The value of --granularities (or --strategies): a list of the granularities there are, each once. */
const granularityList = z.string().transform((text, ctx): Granularity[] => {
  const list = readGranularities(text);
  if ('names' in list) return list.names;
  ctx.addIssue({ code: 'custom', message: list.problem });
  return z.NEVER;
});

/** A number keeping `rule`, said in words when it does not ("must be a whole number >= 1"). */
const numberWhere = (rule: NumberRule) =>
  flagValue(
    (text) => {
      const value = readNumber(text);
      return value !== undefined && meetsRule(value, rule) ? value : undefined;
    },
    `must be ${describeRule(rule)}`,
  );
const positive = numberWhere({ min: 0, exclusiveMin: true });
const positiveInteger = numberWhere({ integer: true, min: 1 });
const nonNegative = numberWhere({ min: 0 });
const nonNegativeInteger = numberWhere({ integer: true, min: 0 });

const flagsSchema = z
  .strictObject({
    config: z.string(),
    target: targetSchema,
    region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, { error: 'expected an AWS region such as eu-central-1' }),
    'no-sign': z.boolean(),
    store: z.string(),
    smoke: z.boolean(),
    granularities: granularityList,
    strategies: granularityList,
    rate: positive,
    duration: positiveInteger,
    // The range is checked with the config file's value (validateConfig: "trials must be 1..20").
    trials: numberWhere({ integer: true }),
    'slo-p99': positive,
    'probe-seconds': numberWhere({ integer: true, min: 1, max: 120 }),
    'max-rate': numberWhere({ min: 1 }),
    'no-search': z.boolean(),
    'no-engine': z.boolean(),
    functions: positiveInteger,
    nodes: positiveInteger,
    shards: positiveInteger,
    replicas: nonNegativeInteger,
    'hop-ms': nonNegative,
    levels: flagValue(readLevels, 'expected numbers separated by commas, or "none"'),
    step: positiveInteger,
    'max-vus': positiveInteger,
    depth: positiveInteger,
    fanout: positiveInteger,
    files: positiveInteger,
    'tree-seed': numberWhere({ integer: true }),
    mix: flagValue(readMix, MIX_HINT),
    renames: flagValue(readLevels, 'expected percentages separated by commas, e.g. 2,10,30'),
    paths: z.string(),
    'from-index': z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, { error: 'expected an index name (lowercase letters, digits, ".", "_", "-")' }),
    'path-field': z.string().min(1),
    'max-paths': positiveInteger,
    trace: z.string(),
    'trace-speed': flagValue((text) => {
      const value = readNumber(text);
      return value !== undefined && value > 0 && value <= 1000 ? value : undefined;
    }, 'must be a number in (0, 1000]'),
    'cs-ms': nonNegative,
    skew: flagValue(readSkew, SKEW_HINT),
    'budget-ms': nonNegative,
    'ttl-ms': numberWhere({ integer: true, min: 1000, max: 900_000 }),
    results: z.string(),
    port: numberWhere({ integer: true, min: 1, max: 65535 }),
    'no-seed': z.boolean(),
    warmup: numberWhere({ integer: true, min: 0, max: 500 }),
    help: z.boolean(),
    verbose: z.boolean(),
  })
  .partial();
type Flags = z.infer<typeof flagsSchema>;

const BOOLEAN_FLAGS = new Set(['smoke', 'no-sign', 'no-seed', 'no-search', 'no-engine', 'help', 'verbose']);

function readFlags(argv: string[]): Flags {
  let values: unknown;
  const options = Object.fromEntries(
    Object.keys(flagsSchema.shape).map((name) => [name, { type: BOOLEAN_FLAGS.has(name) ? 'boolean' : 'string', ...(name === 'help' ? { short: 'h' } : {}) }]),
  ) as Record<string, { type: 'string' | 'boolean'; short?: string }>;
  try {
    ({ values } = parseArgs({ args: joinNegativeValues(argv, options), strict: true, allowPositionals: false, options }));
  } catch (error) {
    throw new ConfigError(`${usageErrorFromParseArgs(error).message} (see --help)`);
  }
  const parsed = flagsSchema.safeParse({ ...(values as object) });
  if (!parsed.success) throw configErrorFrom(parsed.error, (at) => `--${at[0] ?? ''}`);
  return parsed.data;
}

/** Flags win over the file and --smoke; a tree or workload flag applies to every workload. */
function applyFlags(base: LoadtestConfig, flags: Flags): LoadtestConfig {
  const config = structuredClone(base);
  const { schedule } = config;
  if (flags.target !== undefined) config.target = flags.target;
  if (flags.region !== undefined) config.region = flags.region;
  if (flags['no-sign']) config.sign = false;
  config.store = chooseStore(flags.store);
  const granularities = givenGranularities(flags);
  if (granularities) config.granularities = granularities.value;
  if (flags.rate !== undefined) schedule.steady.rate = flags.rate;
  if (flags.duration !== undefined) schedule.steady.durationS = flags.duration;
  if (flags.levels !== undefined) schedule.ramp.levels = flags.levels;
  if (flags.trials !== undefined) config.trials = flags.trials;
  if (flags['slo-p99'] !== undefined) config.capacity.objective.p99Ms = flags['slo-p99'];
  if (flags['probe-seconds'] !== undefined) config.capacity.probeS = flags['probe-seconds'];
  if (flags['max-rate'] !== undefined) config.capacity.search.maxRate = flags['max-rate'];
  if (flags['no-search']) config.capacity.enabled = false;
  if (flags['no-engine']) config.engine.enabled = false;
  if (flags.functions !== undefined) config.deployment.functions = flags.functions;
  if (flags.nodes !== undefined) config.deployment.nodes = flags.nodes;
  if (flags.shards !== undefined) config.deployment.shards = flags.shards;
  if (flags.replicas !== undefined) config.deployment.replicas = flags.replicas;
  if (flags['hop-ms'] !== undefined) config.deployment.hopMs = flags['hop-ms'];
  if (flags.step !== undefined) {
    schedule.ramp.stepS = flags.step;
    schedule.ramp.transitionS = Math.min(schedule.ramp.transitionS, Math.max(0, flags.step - 1));
  }
  if (flags['max-vus'] !== undefined) {
    schedule.vus.max = flags['max-vus'];
    schedule.vus.preAllocated = Math.min(schedule.vus.preAllocated, flags['max-vus']);
  }
  config.workloads = config.workloads.map((workload) => ({
    ...workload,
    tree: {
      depth: flags.depth ?? workload.tree.depth,
      fanout: flags.fanout ?? workload.tree.fanout,
      filesPerDir: flags.files ?? workload.tree.filesPerDir,
      seed: flags['tree-seed'] ?? workload.tree.seed,
    },
    mix: flags.mix ?? workload.mix,
    criticalSectionMs: flags['cs-ms'] ?? workload.criticalSectionMs,
    skew: flags.skew ?? workload.skew,
  }));
  if (flags.renames !== undefined) {
    const wrong = flags.renames.filter((share) => !(share >= 0 && share < 100));
    if (wrong.length > 0 || flags.renames.length < 2 || new Set(flags.renames).size !== flags.renames.length) {
      throw new ConfigError(`--renames: expected two or more different percentages in 0..99 (got ${flags.renames.join(',') || 'none'}); see --help`);
    }
    config.workloads = renameSweep(config.workloads[0]!, flags.renames);
  }
  if (flags['budget-ms'] !== undefined) config.retry.budgetMs = flags['budget-ms'];
  config.user = userWorkloadOf(flags, config);
  if (flags['ttl-ms'] !== undefined) config.ttlMs = flags['ttl-ms'];
  if (flags.results !== undefined) config.resultsDir = flags.results;
  if (flags.port !== undefined) config.port = flags.port;
  if (flags['no-seed']) config.seed = false;
  if (flags.warmup !== undefined) config.warmup = flags.warmup;
  if (flags.verbose) config.verbose = true;
  return config;
}

/** --paths, --from-index and --trace, checked now (an index once Elasticsearch is up). */
function userWorkloadOf(flags: Flags, config: LoadtestConfig): UserWorkload | undefined {
  if (flags.paths === undefined && flags['from-index'] === undefined && flags.trace === undefined) {
    if (flags['path-field'] !== undefined) throw new ConfigError('--path-field: only with --from-index; see --help');
    if (flags['trace-speed'] !== undefined) throw new ConfigError('--trace-speed: only with --trace; see --help');
    return undefined;
  }
  if (flags.paths !== undefined && flags['from-index'] !== undefined)
    throw new ConfigError('--paths and --from-index: give one source of paths, not both; see --help');
  if (flags.trace !== undefined && (flags.mix !== undefined || flags.renames !== undefined)) {
    throw new ConfigError(`--trace with ${flags.mix !== undefined ? '--mix' : '--renames'}: the trace says which operations run; drop one; see --help`);
  }
  const max = flags['max-paths'] ?? 20_000;
  if (!Number.isInteger(max) || max < 1) throw new ConfigError(`--max-paths: must be a whole number >= 1 (got ${max}); see --help`);
  const user: UserWorkload = {
    ...(flags.paths !== undefined ? { paths: readPathsFile(flags.paths, max) } : {}),
    ...(flags['from-index'] !== undefined ? { index: { name: flags['from-index'], field: flags['path-field'] ?? 'path', max } } : {}),
    ...(flags.trace !== undefined ? { trace: readTraceFile(flags.trace, flags['trace-speed'] ?? 1) } : {}),
  };
  if (user.trace && config.workloads.length > 1) throw new ConfigError('--trace: one workload only (the config file lists several)');
  checkUserWorkload(user);
  return user;
}

/** One workload per rename share (percent of operations); reads and edits keep their proportion. */
export function renameSweep(base: WorkloadConfig, shares: number[]): WorkloadConfig[] {
  const weights = mixWeights(base.mix);
  const others = weights.read + weights.edit + weights.create + weights.delete;
  const scaled = (share: number, weight: number): number => (others > 0 ? ((100 - share) * weight) / others : 0);
  return shares.map((share) => ({
    ...base,
    name: `renames-${String(share).replace('.', '_')}`,
    mix: {
      read: others > 0 ? scaled(share, weights.read) : 100 - share,
      edit: scaled(share, weights.edit),
      rename: share,
      create: scaled(share, weights.create),
      delete: scaled(share, weights.delete),
    },
  }));
}

/** Defaults, then the --config file, then --smoke, then the other flags. */
export function parseCli(argv: string[]): { config: LoadtestConfig; help: boolean } {
  const flags = readFlags(argv);
  let config = defaultConfig();
  if (flags.config) config = applyConfigFile(config, readConfigFile(flags.config));
  if (flags.smoke)
    config = { ...config, smoke: true, schedule: smokeSchedule(), trials: 1, capacity: smokeCapacity(), engine: { enabled: true, trials: 1, probeS: 1 } };
  config = applyFlags(config, flags);
  const problems = validateConfig(config);
  if (problems.length === 1 && !flags.help) throw new ConfigError(`invalid configuration: ${problems[0]}`);
  if (problems.length > 1 && !flags.help) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return { config, help: flags.help ?? false };
}
