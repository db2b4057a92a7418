/**
 * The --config JSON file: its shape (zod), and how it lays over the defaults. Unknown keys are
 * refused, so a misspelt setting fails the run instead of being silently ignored. Ranges and
 * cross-field rules are checked once, for file and flags alike, by validateConfig.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { defaultWorkload } from '../shared/defaults.js';
import { GRANULARITY_NAMES, type WorkloadConfig } from '../shared/workload.js';
import type { LoadtestConfig } from './config.js';
import { ConfigError, configErrorFrom } from './config-error.js';

const granularitySchema = z.enum(GRANULARITY_NAMES, {
  error: (issue) => `unknown granularity ${JSON.stringify(issue.input)} (use ${GRANULARITY_NAMES.join(', ')})`,
});

/** A base URL without trailing slashes, so `${target}/health` is one path. */
export const targetSchema = z.string().transform((url) => url.replace(/\/+$/, ''));

/** The same defaults as --skew: zipf s = 1, hot spot 10% -> 90%. */
export const skewSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('uniform') }),
  z.strictObject({ kind: z.literal('zipf'), s: z.number().default(1) }),
  z.strictObject({ kind: z.literal('hotspot'), hotFraction: z.number().default(0.1), hotTraffic: z.number().default(0.9) }),
]);

const workloadPatch = z.strictObject({
  name: z.string().optional(),
  tree: z.strictObject({ depth: z.number(), fanout: z.number(), filesPerDir: z.number(), seed: z.number() }).partial().optional(),
  mix: z.strictObject({ read: z.number(), edit: z.number(), rename: z.number(), create: z.number(), delete: z.number() }).partial().optional(),
  criticalSectionMs: z.number().optional(),
  skew: skewSchema.optional(),
});
type WorkloadPatch = z.infer<typeof workloadPatch>;

/** `workload` is merged into every entry of `workloads`. */
export const configFileSchema = z.strictObject({
  granularities: z.array(granularitySchema).optional(),
  /** `granularities` under the name that config files written for the kit use. */
  strategies: z.array(granularitySchema).optional(),
  workload: workloadPatch.optional(),
  workloads: z.array(workloadPatch).optional(),
  steady: z.strictObject({ rate: z.number(), durationS: z.number() }).partial().optional(),
  ramp: z
    .strictObject({ levels: z.array(z.number()), stepS: z.number(), transitionS: z.number() })
    .partial()
    .optional(),
  vus: z.strictObject({ preAllocated: z.number(), max: z.number() }).partial().optional(),
  gracefulStopS: z.number().optional(),
  trials: z.number().optional(),
  capacity: z
    .strictObject({
      enabled: z.boolean(),
      probeS: z.number(),
      objective: z.strictObject({ goodputRatio: z.number(), p99Ms: z.number(), errorRate: z.number() }).partial(),
      search: z
        .strictObject({
          startRate: z.number(),
          maxRate: z.number(),
          minRate: z.number(),
          resolution: z.number(),
          maxProbes: z.number(),
          maxProbesFromBracket: z.number(),
          confirmMarginalMisses: z.boolean(),
        })
        .partial(),
    })
    .partial()
    .optional(),
  retry: z.strictObject({ budgetMs: z.number(), baseDelayMs: z.number(), maxDelayMs: z.number(), honourRetryAfter: z.boolean() }).partial().optional(),
  ttlMs: z.number().optional(),
  target: targetSchema.optional(),
  resultsDir: z.string().optional(),
  seed: z.boolean().optional(),
  port: z.number().optional(),
  warmup: z.number().optional(),
});
export type ConfigFile = z.infer<typeof configFileSchema>;

export function readConfigFile(path: string): ConfigFile {
  let json: unknown;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'a folder, not a file'
          : code === 'EACCES'
            ? 'not readable (permission denied)'
            : (error as Error).message;
    throw new ConfigError(`--config ${path}: ${why}`);
  }
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`--config ${path}: not valid JSON (${(error as Error).message})`);
  }
  const parsed = configFileSchema.safeParse(json);
  if (!parsed.success) throw configErrorFrom(parsed.error, (at) => `--config ${path}${at.length ? ` ${at.join('.')}` : ''}`);
  if (parsed.data.granularities && parsed.data.strategies)
    throw new ConfigError(`--config ${path}: granularities and strategies: two names of one setting; give one`);
  return parsed.data;
}

function mergeWorkload(base: WorkloadConfig, patch: WorkloadPatch | undefined): WorkloadConfig {
  if (!patch) return base;
  return {
    name: patch.name ?? base.name,
    tree: { ...base.tree, ...patch.tree },
    mix: { ...base.mix, ...patch.mix },
    criticalSectionMs: patch.criticalSectionMs ?? base.criticalSectionMs,
    skew: patch.skew ?? base.skew,
  };
}

export function applyConfigFile(config: LoadtestConfig, file: ConfigFile): LoadtestConfig {
  const next: LoadtestConfig = structuredClone(config);
  const granularities = file.granularities ?? file.strategies;
  if (granularities) next.granularities = granularities;
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
  if (file.trials !== undefined) next.trials = file.trials;
  if (file.capacity) {
    next.capacity = {
      enabled: file.capacity.enabled ?? next.capacity.enabled,
      probeS: file.capacity.probeS ?? next.capacity.probeS,
      objective: { ...next.capacity.objective, ...file.capacity.objective },
      search: { ...next.capacity.search, ...file.capacity.search },
    };
  }
  if (file.ttlMs !== undefined) next.ttlMs = file.ttlMs;
  if (file.target !== undefined) next.target = file.target;
  if (file.resultsDir !== undefined) next.resultsDir = file.resultsDir;
  if (file.seed !== undefined) next.seed = file.seed;
  if (file.port !== undefined) next.port = file.port;
  if (file.warmup !== undefined) next.warmup = file.warmup;
  return next;
}
