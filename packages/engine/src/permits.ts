/**
 * Semaphores (docs/permits.md), as pure decisions: a lock document whose holders each carry
 * `permits`, which add up to at most the document's `permitLimit`. Every holder of a semaphore is an
 * exclusive (X) holder as the rest of the engine sees it: what is above and below the target
 * (ancestors, the namespace's global lock, locks below a tree path) meets it as it meets any writer.
 * Only on the document itself do permit holders share: with each other, while their permits fit.
 */
import { compatible } from './compatibility.js';
import type { HolderMode, Permits } from './model.js';

/** Whoever takes room on a document: a holder, a reserved ticket, or the one asking. */
export interface Occupant {
  mode: HolderMode;
  /** A semaphore's: the permits it takes. Absent: a plain lock's. */
  permits?: number | undefined;
}

/** The permits these occupants take (a plain one takes none: it never shares with permits). */
export const permitsTaken = (occupants: readonly Occupant[]): number => occupants.reduce((sum, occupant) => sum + (occupant.permits ?? 0), 0);

/**
 * Whether `wanted` can join `occupants` on one document. A plain lock shares by the mode table, with
 * plain occupants only; a permit holder shares with permit holders only, while all their permits and
 * its own fit in `limit` (none given: it never fits, so a caller that forgot the limit only delays).
 */
export function fits(wanted: Occupant, occupants: readonly Occupant[], limit: number | undefined): boolean {
  if (wanted.permits === undefined) return occupants.every((occupant) => occupant.permits === undefined && compatible(wanted.mode, occupant.mode));
  if (limit === undefined) return false;
  return occupants.every((occupant) => occupant.permits !== undefined) && permitsTaken(occupants) + wanted.permits <= limit;
}

/**
 * The occupants that keep `wanted` out (none: it fits). A plain lock is kept out by each incompatible
 * occupant on its own; permits by all of them together, when their permits leave too few.
 */
export function blockersOf<T extends Occupant>(wanted: Occupant, occupants: readonly T[], limit: number | undefined): T[] {
  if (wanted.permits === undefined) return occupants.filter((occupant) => !fits(wanted, [occupant], limit));
  return fits(wanted, occupants, limit) ? [] : [...occupants];
}

/**
 * A semaphore and a plain lock never share a document, and one semaphore has one limit: a request
 * that does not match a document in use (live holders or waiters) is refused, never queued. A
 * document nobody uses any more is taken as if absent: its limit goes with its last holder.
 * Null stands for a plain lock.
 */
export function permitMismatch(
  requested: Permits | undefined,
  stored: number | undefined,
  inUse: boolean,
): { requestedLimit: number | null; heldLimit: number | null } | undefined {
  if (!inUse) return undefined;
  const requestedLimit = requested?.limit ?? null;
  const heldLimit = stored ?? null;
  return requestedLimit === heldLimit ? undefined : { requestedLimit, heldLimit };
}
