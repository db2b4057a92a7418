/** The documents a lease token names, as held by that lease: what renew and release start from. */
import { LeaseTokenMismatchError } from '../errors.js';
import { type DecodedToken, proofMatches } from '../lease-token.js';
import type { PlannedKey } from '../model.js';
import type { StoredLock } from '../store.js';
import type { EngineContext } from './context.js';

export type OwnedToken = DecodedToken & { keys: PlannedKey[] };

/**
 * Reads the lease's documents and checks the token's secret; throws LeaseTokenMismatchError before
 * any write. A key that looks lost is confirmed by the primary: a copy cut off from the cluster may
 * not have seen our latest write.
 */
export async function readOwned(
  context: EngineContext,
  token: OwnedToken,
  keys: readonly PlannedKey[] = token.keys,
): Promise<{ owned: StoredLock[]; missingKeys: string[] }> {
  const found = await context.store.read(keys.map((key) => key.docId));
  const holds = (lock: StoredLock | null | undefined): boolean => lock?.body.holders.some((holder) => holder.lease === token.leaseId) ?? false;
  const doubtful = keys.filter((key) => !holds(found.get(key.docId)));
  if (doubtful.length > 0) {
    const confirmed = await context.store.readPrimary(doubtful.map((key) => key.docId));
    for (const [docId, lock] of confirmed) found.set(docId, lock);
  }
  const owned: StoredLock[] = [];
  const missingKeys: string[] = [];
  for (const key of keys) {
    const lock = found.get(key.docId);
    const mine = lock?.body.holders.find((holder) => holder.lease === token.leaseId);
    if (!lock || !mine) {
      missingKeys.push(key.key);
      continue;
    }
    if (!proofMatches(mine.proof, token.leaseId, token.secret)) throw new LeaseTokenMismatchError(undefined, { leaseId: token.leaseId });
    owned.push(lock);
  }
  return { owned, missingKeys };
}
