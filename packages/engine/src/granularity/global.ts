/**
 * Global locks: one lock per namespace, the root above its document ids and its tree paths. A global
 * lock waits for the live locks below it that its mode excludes (every writer for S, everything for
 * X), found by a search once anything was ever locked in the namespace (scope.ts).
 */
import { GLOBAL_KEY } from '../../../client/src/wire.js';
import { targetMode } from '../compatibility.js';
import type { Above, GranularityRules } from './rules.js';
import { confirmScope, scopeHold } from './scope.js';

export { GLOBAL_KEY } from '../../../client/src/wire.js';

export interface GlobalTarget {
  namespace: string;
  granularity: 'global';
}

/** The namespace's root: its global lock's document, above every other granularity's keys. */
export const ROOT: Above = { granularity: 'global', key: GLOBAL_KEY };

export const globalRules: GranularityRules<GlobalTarget> = {
  name: 'global',
  tag: 'g',
  check: () => {},
  target: (namespace) => ({ namespace, granularity: 'global' }),
  plan: (_, mode) => [{ key: GLOBAL_KEY, mode: targetMode(mode) }],
  // Below the root: every lock of the namespace, whatever its granularity.
  below: (_, registered) => ({ granularities: registered.filter((name) => name !== globalRules.name) }),
  refusesPermits: 'are for a document target with one id, or a tree path: a semaphore over a whole namespace is not offered',
  confirm: (context, held) => confirmScope(context, scopeHold(context, held, globalRules.describe(held.target), [], {})),
  toFields: () => ({}),
  identity: () => GLOBAL_KEY,
  describe: (target) => `${target.namespace} (global)`,
  logKey: () => GLOBAL_KEY,
};
