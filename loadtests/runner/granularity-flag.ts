/**
 * The flag that picks the granularities a command measures, `--granularities document,tree`. It is
 * also read as `--strategies`, the name that commands and scripts written against the kit pass.
 */
import { type FlagSpec, listFlag, readList, UsageError } from '../../tools/cli/flags.js';
import { GRANULARITY_NAMES, type Granularity } from '../shared/workload.js';

/** parseFlags' spec of the flag, under both of its names. */
export const GRANULARITIES_FLAG = { granularities: { type: 'string' }, strategies: { type: 'string' } } as const satisfies FlagSpec;

/** The value given under either name, and that name for messages; a UsageError when both are given. */
export function givenGranularities<Value>(values: { granularities?: Value; strategies?: Value }): { flag: string; value: Value } | undefined {
  if (values.granularities !== undefined && values.strategies !== undefined) {
    throw new UsageError('--granularities and --strategies: two names of one flag; give one');
  }
  if (values.granularities !== undefined) return { flag: '--granularities', value: values.granularities };
  if (values.strategies !== undefined) return { flag: '--strategies', value: values.strategies };
  return undefined;
}

/** A comma-separated list of granularities, or what is wrong with it (naming the granularities there are). */
export const readGranularities = (text: string): { names: Granularity[] } | { problem: string } => readList(text, GRANULARITY_NAMES, 'granularity');

/** The granularities the flag names, else `fallback`; a UsageError naming the flag and the granularities there are. */
export function granularitiesFlag(values: { granularities?: unknown; strategies?: unknown }, fallback: readonly Granularity[]): Granularity[] {
  const given = givenGranularities(values);
  return given ? listFlag(given.flag, String(given.value), GRANULARITY_NAMES, 'granularity') : [...fallback];
}
