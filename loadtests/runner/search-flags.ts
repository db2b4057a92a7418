/**
 * The flags of the commands that search each granularity's capacity on a lock store of their own
 * (loadtest:engine, loadtest:model): the store, the granularities, how many searches and how long a probe.
 */
import type { SearchProduct } from '../../functions/store/search-client.js';
import { chooseStore, STORE_FLAG } from '../../infra/lib/store-target.js';
import { type FlagSpec, numberFlag } from '../../tools/cli/flags.js';
import type { Granularity } from '../shared/workload.js';
import { GRANULARITIES_FLAG, granularitiesFlag } from './granularity-flag.js';

export const SEARCH_FLAGS = {
  ...STORE_FLAG,
  ...GRANULARITIES_FLAG,
  trials: { type: 'string' },
  'probe-seconds': { type: 'string' },
} as const satisfies FlagSpec;

export interface SearchFlags {
  product: SearchProduct;
  granularities: Granularity[];
  trials: number;
  probeS: number;
}

/** The command's values of SEARCH_FLAGS, each checked (a UsageError naming the flag), else its default. */
export function readSearchFlags(
  values: Record<string, string | boolean | undefined>,
  defaults: { granularities: readonly Granularity[]; trials: number; probeS: number; maxProbeS: number },
): SearchFlags {
  const text = (name: string): string | undefined => values[name] as string | undefined;
  return {
    product: chooseStore(values.store),
    granularities: granularitiesFlag(values, defaults.granularities),
    trials: numberFlag('--trials', text('trials'), { integer: true, min: 1, max: 20 }, defaults.trials),
    probeS: numberFlag('--probe-seconds', text('probe-seconds'), { integer: true, min: 1, max: defaults.maxProbeS }, defaults.probeS),
  };
}
