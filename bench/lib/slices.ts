/**
 * How the benchmarks that interleave their rows in timed slices over rounds are sized: workers per
 * row, seconds per slice and rounds, each movable by an environment variable.
 */
import { numberFlag } from '../../tools/cli/flags.js';

export interface Slices {
  concurrency: number;
  secondsPerSlice: number;
  rounds: number;
}

/** BENCH_CONCURRENCY, BENCH_SECONDS and BENCH_ROUNDS, else the benchmark's defaults; a UsageError naming the variable when one is wrong. */
export function slicesFromEnv(defaults: Slices, env: Record<string, string | undefined> = process.env): Slices {
  const positiveInteger = { integer: true, min: 1 };
  return {
    concurrency: numberFlag('BENCH_CONCURRENCY', env.BENCH_CONCURRENCY, positiveInteger, defaults.concurrency),
    secondsPerSlice: numberFlag('BENCH_SECONDS', env.BENCH_SECONDS, { min: 0, exclusiveMin: true }, defaults.secondsPerSlice),
    rounds: numberFlag('BENCH_ROUNDS', env.BENCH_ROUNDS, positiveInteger, defaults.rounds),
  };
}
