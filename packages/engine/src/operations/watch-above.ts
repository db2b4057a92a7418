/**
 * A caller that may wait and was refused by a lock above its target (a directory lock over its
 * file, the namespace's global lock over its ids) is not in that lock's queue: it watches the
 * blocking documents with realtime reads and tries again as soon as they show no blocking holder.
 * A blind backoff overshoots the blocker's release by half its last interval on average, and every
 * file under a short directory lock paid that overshoot. A read here only says when to try again:
 * the attempt's own conditional write and primary read decide the grant.
 */
import { compatible } from '../compatibility.js';
import { lockDocId } from '../doc-id.js';
import { aboveTarget } from '../granularity/index.js';
import { isLive } from '../lock-document.js';
import type { ConflictingKey, LockTarget } from '../model.js';
import type { StoredLock } from '../store.js';
import type { EngineContext } from './context.js';

/** Whether every conflict is with a lock above the target (its granularity's guards: an ancestor path, the namespace's root). */
export function blockedOnlyAbove(target: LockTarget, conflicts: readonly ConflictingKey[]): boolean {
  const above = aboveTarget(target);
  return (
    conflicts.length > 0 &&
    conflicts.every(
      (conflict) => conflict.reason === undefined && above.some((guard) => guard.granularity === conflict.granularity && guard.key === conflict.key),
    )
  );
}

/** Returns once no conflicting document shows a live blocking holder, or at `deadline`. */
export async function watchAbove(context: EngineContext, namespace: string, conflicts: readonly ConflictingKey[], deadline: number): Promise<void> {
  const { settings, store } = context;
  const watched = conflicts.map((conflict) => ({ docId: lockDocId(namespace, conflict.granularity, conflict.key), mode: conflict.requestedMode }));
  let heldSince = settings.now();
  for (;;) {
    const now = settings.now();
    if (now >= deadline) return;
    await settings.sleep(Math.min(lookAgainIn(context, heldSince, now), deadline - now));
    let found: Map<string, StoredLock | null>;
    try {
      found = await store.read(watched.map((entry) => entry.docId));
    } catch {
      // The look failed, not the acquire: the next attempt asks the primary, and says so if it cannot.
      return;
    }
    const at = settings.now();
    const blocking = watched.flatMap(({ docId, mode }) => blockersIn(found.get(docId), mode, at, settings.maxClockSkewMs));
    if (blocking.length === 0) return;
    heldSince = Math.min(...blocking.map((holder) => holder.grantedAt));
  }
}

const blockersIn = (lock: StoredLock | null | undefined, mode: ConflictingKey['requestedMode'], now: number, skewMs: number) =>
  lock?.body.holders.filter((holder) => isLive(holder, now, skewMs) && !compatible(mode, holder.mode)) ?? [];

/** As a queued waiter looks (queue-wait.ts): a quarter of the hold so far, within the settings' poll bounds. */
function lookAgainIn(context: EngineContext, heldSince: number, now: number): number {
  const { minMs, maxMs } = context.settings.queue.pollMs;
  return Math.max(minMs, Math.min(maxMs, (now - heldSince) / 4));
}
