/** Takes one lease off a set of lock documents: the heart of release, and of an acquire's rollback. */
import { type GiveBack, removeLeaseOp } from '../lock-document.js';
import type { StoredHolder } from '../model.js';
import type { StoredLock } from '../store.js';
import { writeUntilSettled } from '../write-loop.js';
import { type EngineContext, keepingBudget } from './context.js';

/**
 * Removes the lease from each document, re-reading from the primary the ones that changed under us
 * ("gone" must not come from a stale copy that has not seen our lease yet). Returns the holders
 * removed and the keys the lease was not on. `clearMark`: a release, which may clear a `lockedBelow`
 * mark that no longer guards anything (removeLeaseOp says when).
 */
export async function removeLease(
  context: EngineContext,
  locks: readonly StoredLock[],
  leaseId: string,
  giveBack: GiveBack = false,
  clearMark = false,
): Promise<{ removed: StoredHolder[]; missing: string[]; handedOver: number }> {
  const removed: StoredHolder[] = [];
  let handedOver = 0;
  const missingKeys = new Set<string>();
  const keyOf = new Map(locks.map((lock) => [lock.docId, lock.body.key]));
  await writeUntilSettled(context, keepingBudget(context.settings), locks, {
    decide: (pending, now) =>
      pending.flatMap((lock) => {
        const op = removeLeaseOp(lock, leaseId, now, context.settings, giveBack, clearMark);
        if (!lock.body.holders.some((holder) => holder.lease === leaseId)) missingKeys.add(lock.body.key);
        return op ? [{ item: lock, op }] : [];
      }),
    applied: (lock, _, op) => {
      handedOver += op.queueEffects?.reserved.length ?? 0;
      const mine = lock.body.holders.find((holder) => holder.lease === leaseId);
      if (mine) removed.push(mine);
    },
    reread: async (changed) => {
      const fresh = await context.store.readPrimary(changed.map((lock) => lock.docId));
      return changed.flatMap((lock) => {
        const now = fresh.get(lock.docId);
        if (!now) missingKeys.add(keyOf.get(lock.docId)!);
        return now ? [now] : [];
      });
    },
    keysOf: (pending) => pending.map((lock) => lock.body.key),
  });
  return { removed, missing: [...missingKeys], handedOver };
}

/**
 * Best effort, for a failed acquire: false when some of the lease may remain (it then ends with its
 * TTL). A key this attempt took over from an earlier delivery of its call goes back to that delivery;
 * a claimed ticket goes back to its place when its waiter waits on (removeLeaseOp, `giveBack`).
 */
export async function rollback(context: EngineContext, locks: readonly StoredLock[], leaseId: string, giveBack: GiveBack = 'rollback'): Promise<boolean> {
  if (locks.length === 0) return true;
  try {
    await removeLease(context, locks, leaseId, giveBack);
    return true;
  } catch {
    return false;
  }
}
