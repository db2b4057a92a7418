/** The granularities by name. */
import type { Granularity, LockTarget } from '../model.js';
import { documentRules } from './document.js';
import { globalRules } from './global.js';
import type { GranularityRules } from './rules.js';
import { treeRules } from './tree.js';

const GRANULARITIES: { [G in Granularity]: GranularityRules<G> } = { global: globalRules, document: documentRules, tree: treeRules };

/**
 * The rules of one granularity. Dispatch is by the target's own `granularity`, so a rule given a
 * target always gets one of its kind: the cast only forgets which kind that is.
 */
export const rulesFor = (granularity: Granularity): GranularityRules<Granularity> => GRANULARITIES[granularity] as unknown as GranularityRules<Granularity>;

export const describeTarget = (target: LockTarget): string => rulesFor(target.granularity).describe(target);

/** The log key of a request's target fields; `*` for a granularity this service does not know. */
export const logKeyOf = (input: { granularity: string; ids?: string[] | undefined; path?: string | undefined }): string =>
  input.granularity in GRANULARITIES ? rulesFor(input.granularity as Granularity).logKey(input) : '*';

export { GLOBAL_KEY } from './global.js';
export type { GranularityRules, RawTargetFields, TargetField, TargetOf } from './rules.js';
export { ancestorsOf } from './tree.js';
