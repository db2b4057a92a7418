/** Multi-granularity locking: which holder modes may share one lock document. */
import type { HolderMode, PlannedKey, RequestedMode } from './model.js';

const COMPATIBLE: Readonly<Record<HolderMode, ReadonlySet<HolderMode>>> = {
  IS: new Set<HolderMode>(['IS', 'IX', 'S']),
  IX: new Set<HolderMode>(['IS', 'IX']),
  S: new Set<HolderMode>(['IS', 'S']),
  X: new Set<HolderMode>(),
};

export function compatible(requested: HolderMode, held: HolderMode): boolean {
  return COMPATIBLE[requested].has(held);
}

export const targetMode = (mode: RequestedMode): HolderMode => (mode === 'exclusive' ? 'X' : 'S');
export const intentionMode = (mode: RequestedMode): HolderMode => (mode === 'exclusive' ? 'IX' : 'IS');

/** Exclusive-only plans can try `create` first: a free key then costs one write and no read. */
export const allExclusive = (keys: readonly PlannedKey[]): boolean => keys.every((key) => key.mode === 'X');
