/**
 * Global locks: one lock per namespace, the root above its document ids and its tree paths. A global
 * lock waits for the live locks below it that its mode excludes (every writer for S, everything for
 * X), found by a search once anything was ever locked in the namespace (scope.ts).
 */
import { targetMode } from '../compatibility.js';
import type { GranularityRules } from './rules.js';
import { confirmScope, GLOBAL_KEY, scopeHold } from './scope.js';

export { GLOBAL_KEY } from './scope.js';

export const globalRules: GranularityRules<'global'> = {
  name: 'global',
  fields: [],
  check: () => {},
  target: (namespace) => ({ namespace, granularity: 'global' }),
  plan: (_, mode) => [{ key: GLOBAL_KEY, mode: targetMode(mode) }],
  confirm: (context, held) => confirmScope(context, scopeHold(context, held, globalRules.describe(held.target), [], {})),
  toFields: () => ({}),
  identity: () => GLOBAL_KEY,
  describe: (target) => `${target.namespace} (global)`,
  logKey: () => GLOBAL_KEY,
};
