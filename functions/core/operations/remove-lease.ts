/** Takes one lease off a set of lock documents: the heart of release, and of an acquire's rollback. */
import { removeLeaseOp } from '../lock-document.js';
import type { StoredHolder } from '../model.js';
import type { StoredLock } from '../store.js';
import { writeUntilSettled } from '../write-loop.js';
import { type EngineContext, keepingBudget } from './context.js';

/**
 * Removes the lease from each document, re-reading from the primary the ones that changed under us
 * ("gone" must not come from a stale copy that has not seen our lease yet). Returns the holders
 * removed and the keys the lease was not on.
 */
export async function removeLease(
  context: EngineContext,
  locks: readonly StoredLock[],
  leaseId: string,
  restore: ReadonlyMap<string, StoredHolder> = new Map(),
): Promise<{ removed: StoredHolder[]; missing: string[] }> {
  const removed: StoredHolder[] = [];
  const missing: string[] = [];
  const keyOf = new Map(locks.map((lock) => [lock.docId, lock.body.key]));
  await writeUntilSettled(context, keepingBudget(context.settings), locks, {
    decide: (pending, now) =>
      pending.flatMap((lock) => {
        const op = removeLeaseOp(lock, leaseId, now, context.settings.maxClockSkewMs, restore.get(lock.docId));
        if (!op) missing.push(lock.body.key);
        return op ? [{ item: lock, op }] : [];
      }),
    applied: (lock) => removed.push(lock.body.holders.find((holder) => holder.lease === leaseId)!),
    reread: async (changed) => {
      const fresh = await context.store.readPrimary(changed.map((lock) => lock.docId));
      return changed.flatMap((lock) => {
        const now = fresh.get(lock.docId);
        if (!now) missing.push(keyOf.get(lock.docId)!);
        return now ? [now] : [];
      });
    },
    keysOf: (pending) => pending.map((lock) => lock.body.key),
  });
  return { removed, missing };
}

/**
 * Best effort, for a failed acquire: false when some of the lease may remain (it then ends with its
 * TTL). `restore`: per document, the earlier delivery's holder this attempt took over, put back.
 */
export async function rollback(
  context: EngineContext,
  locks: readonly StoredLock[],
  leaseId: string,
  restore: ReadonlyMap<string, StoredHolder> = new Map(),
): Promise<boolean> {
  if (locks.length === 0) return true;
  try {
    await removeLease(context, locks, leaseId, restore);
    return true;
  } catch {
    return false;
  }
}
