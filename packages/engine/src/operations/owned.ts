/** The documents a lease token names, as held by that lease: what renew and release start from. */
import { LeaseTokenMismatchError } from '../errors.js';
import { type DecodedToken, proofMatches } from '../lease-token.js';
import { noteOf } from '../lock-document.js';
import type { PlannedKey } from '../model.js';
import type { StoredLock } from '../store.js';
import type { EngineContext } from './context.js';

export type OwnedToken = DecodedToken & { keys: PlannedKey[] };

/**
 * Reads the lease's documents and checks the token's secret; throws LeaseTokenMismatchError before
 * any write. A key that looks lost is confirmed by the primary: a copy cut off from the cluster may
 * not have seen our latest write. `fromPrimary` reads them all from the primary at once. `without`:
 * the documents, as the primary has them, that no longer hold the lease but a later delivery of its
 * call that took it over would give it back (the secret checked against the note).
 */
export async function readOwned(
  context: EngineContext,
  token: OwnedToken,
  keys: readonly PlannedKey[] = token.keys,
  fromPrimary = false,
): Promise<{ owned: StoredLock[]; missingKeys: string[]; without: StoredLock[] }> {
  const docIds = keys.map((key) => key.docId);
  const found = fromPrimary ? await context.store.readPrimary(docIds) : await context.store.read(docIds);
  const holds = (lock: StoredLock | null | undefined): boolean => lock?.body.holders.some((holder) => holder.lease === token.leaseId) ?? false;
  const doubtful = fromPrimary ? [] : keys.filter((key) => !holds(found.get(key.docId)));
  if (doubtful.length > 0) {
    const confirmed = await context.store.readPrimary(doubtful.map((key) => key.docId));
    for (const [docId, lock] of confirmed) found.set(docId, lock);
  }
  return ownedIn(token, keys, found);
}

/** Sorts documents already read (from the primary, for a negative conclusion) as readOwned does; throws LeaseTokenMismatchError as it does. */
export function ownedIn(
  token: OwnedToken,
  keys: readonly PlannedKey[],
  found: ReadonlyMap<string, StoredLock | null>,
): { owned: StoredLock[]; missingKeys: string[]; without: StoredLock[] } {
  const owned: StoredLock[] = [];
  const missingKeys: string[] = [];
  const without: StoredLock[] = [];
  for (const key of keys) {
    const lock = found.get(key.docId);
    const mine = lock?.body.holders.find((holder) => holder.lease === token.leaseId);
    if (!lock || !mine) {
      missingKeys.push(key.key);
      // A later delivery of the call took the key over and would give it back to this lease: only the
      // lease's own secret may tell it not to.
      const note = lock?.body.holders.map((holder) => noteOf(holder.restores, token.leaseId)).find((found) => found !== undefined);
      if (note && !proofMatches(note.proof, token.leaseId, token.secret)) throw new LeaseTokenMismatchError({ leaseId: token.leaseId });
      if (lock && note) without.push(lock);
      continue;
    }
    if (!proofMatches(mine.proof, token.leaseId, token.secret)) throw new LeaseTokenMismatchError({ leaseId: token.leaseId });
    owned.push(lock);
  }
  return { owned, missingKeys, without };
}
