/** Global locks: one lock per namespace, for writers that touch anything in it. */
import { targetMode } from '../compatibility.js';
import type { GranularityRules } from './rules.js';

/** The key of the one lock document of a namespace. */
export const GLOBAL_KEY = '*';

export const globalRules: GranularityRules<'global'> = {
  name: 'global',
  tag: 'g',
  fields: [],
  check: () => {},
  target: (namespace) => ({ namespace, granularity: 'global' }),
  plan: (_, mode) => [{ key: GLOBAL_KEY, mode: targetMode(mode) }],
  toFields: () => ({}),
  identity: () => GLOBAL_KEY,
  describe: (target) => `${target.namespace} (global)`,
  logKey: () => GLOBAL_KEY,
};
