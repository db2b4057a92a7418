/**
 * The granularities by name: the wire contract's list (GRANULARITY_NAMES), each with the rules of its
 * own module. The mapped type makes the built-in registry cover exactly that list, so a granularity is
 * one module and one line here; everything that enumerates granularities reads this registry.
 */
import type { Granularity, TargetBody } from '../../../client/src/wire.js';
import { tagLockDocuments } from '../doc-id.js';
import { documentRules } from './document.js';
import { GLOBAL_KEY, globalRules } from './global.js';
import type { Above, BelowScope, GranularityRules, RawTargetFields, TargetBase } from './rules.js';
import { TARGET_FIELDS } from './target-fields.js';
import { treeRules } from './tree.js';

const BUILT_IN = { global: globalRules, document: documentRules, tree: treeRules } satisfies {
  [G in Granularity]: GranularityRules<TargetBase & { granularity: G }>;
};

/** A lock target: a namespace and what its granularity's module names in it. */
export type LockTarget = { [G in Granularity]: ReturnType<(typeof BUILT_IN)[G]['target']> }[Granularity];

const registered = new Map<string, GranularityRules<LockTarget>>();

/**
 * Makes a granularity known to the engine: the built-in ones below, and a test's own (which the types,
 * bound to the wire contract's list, do not know: hence the cast). Register before making the
 * LockService that takes its requests: request schemas are built with the names known then.
 */
export function registerGranularity(rules: GranularityRules<TargetBase>): void {
  if (registered.has(rules.name)) throw new Error(`The ${rules.name} granularity is registered already`);
  tagLockDocuments(rules.name, rules.tag);
  registered.set(rules.name, rules as unknown as GranularityRules<LockTarget>);
}

for (const rules of Object.values(BUILT_IN)) registerGranularity(rules);

export const isRegistered = (name: unknown): name is Granularity => typeof name === 'string' && registered.has(name);

/** Every granularity the engine knows, in registration order. */
export const granularityNames = (): Granularity[] => [...registered.keys()] as Granularity[];

/**
 * The rules of one granularity. Dispatch is by the target's own `granularity`, so a rule given a
 * target always gets one of its kind.
 */
export function rulesFor(granularity: Granularity): GranularityRules<LockTarget> {
  const rules = registered.get(granularity);
  if (!rules) throw new Error(`No granularity ${granularity} is registered`);
  return rules;
}

export const describeTarget = (target: LockTarget): string => rulesFor(target.granularity).describe(target);

/** The documents above a target that can block it (none for a global lock). */
export const aboveTarget = (target: LockTarget): Above[] => rulesFor(target.granularity).guards?.(target) ?? [];

/** The target as a request names it (flat fields, arrays copied). */
export const targetBody = (target: LockTarget): TargetBody => ({
  namespace: target.namespace,
  granularity: target.granularity,
  ...rulesFor(target.granularity).toFields(target),
});

/** The target that one lock document stands for (a single-key target: what a queued waiter asked for). */
export function targetOfKey(namespace: string, granularity: Granularity, key: string): LockTarget {
  const rules = rulesFor(granularity);
  return rules.target(namespace, rules.field === undefined ? {} : TARGET_FIELDS[rules.field].ofKey(key));
}

const NOTHING_BELOW: BelowScope = { granularities: [] };

/**
 * Where the locks below a search's subject are: below a tree path (`path`), or below the namespace's
 * root (no path), as the tree's and the global granularity's rules say.
 */
export function belowScopeOf(query: { path?: string }): BelowScope {
  const [rules, key] = query.path === undefined ? [globalRules, GLOBAL_KEY] : [treeRules, query.path];
  return rules.below(key, granularityNames()) ?? NOTHING_BELOW;
}

/** The log key of a request's target fields; `*` for a granularity this service does not know. */
export const logKeyOf = (input: RawTargetFields & { granularity: string }): string =>
  isRegistered(input.granularity) ? rulesFor(input.granularity).logKey(input) : '*';

export { GLOBAL_KEY, ROOT } from './global.js';
export type { Above, BelowScope, GranularityRules, HeldTarget, RawTargetFields, TargetBase, TargetField } from './rules.js';
export { confirmScope, scopeHold } from './scope.js';
export { TARGET_FIELD_NAMES, TARGET_FIELDS } from './target-fields.js';
export { ancestorsOf } from './tree.js';
