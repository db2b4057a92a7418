/**
 * What a lock is taken on, as the wire names it: the granularities, the modes, and the fields that
 * name a target. The one list of granularities: the functions' registry (packages/engine/src/granularity/)
 * must give rules to exactly these, and everything else that enumerates them reads this list.
 */

export const GRANULARITY_NAMES = ['global', 'document', 'tree'] as const;

export type Granularity = (typeof GRANULARITY_NAMES)[number];

export const isGranularity = (name: unknown): name is Granularity => GRANULARITY_NAMES.some((granularity) => granularity === name);

/** The key of a namespace's global lock: the root above its document ids and tree paths, as inspect and conflicts name it. */
export const GLOBAL_KEY = '*';

export type LockMode = 'exclusive' | 'shared';
/** Multi-granularity modes a lock document records: intentions (IS, IX) on ancestors, S or X on the target. */
export type HolderMode = 'IS' | 'IX' | 'S' | 'X';

/** The fields that name a target inside its namespace; which of them a granularity takes is its own rule. */
export interface TargetFieldsBody {
  /** Document locks: one or many ids, taken all or nothing. */
  ids?: string[];
  /** Tree locks: an absolute path such as `/projects/a/readme.txt`. */
  path?: string;
}

export type TargetField = keyof TargetFieldsBody;

/** A target as a request names it. */
export interface TargetBody extends TargetFieldsBody {
  namespace: string;
  granularity: Granularity;
}
