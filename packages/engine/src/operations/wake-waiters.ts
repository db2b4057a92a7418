/**
 * After a write served a lock's queue, the waiters woken by a channel hear of it: one the lock is now
 * reserved for is woken to claim it (a hint, never a grant: only its own claim grants it), one whose
 * ticket left unserved is told it failed. Whoever made the write does this at once; the sweeper wakes
 * again a reserved waiter that has not claimed. A message lost, late or told twice changes nothing in
 * the lock document: a second wake-up makes the waiter claim again, which finds its own grant.
 */
import { LockWaitExpiredError } from '../errors.js';
import { targetOfKey } from '../granularity/index.js';
import { replaceOp, settleFences } from '../lock-document.js';
import type { LockDocument, LockTarget, StoredTicket } from '../model.js';
import type { QueueEffects, StoredLock } from '../store.js';
import type { WakeMessage } from '../wake.js';
import { writeUntilSettled } from '../write-loop.js';
import { type EngineContext, keepingBudget } from './context.js';

export interface WrittenEffects {
  /** The document as the write left it (null: deleted). */
  lock: StoredLock | null;
  effects: QueueEffects;
}

/** The target a single-key lock document stands for. */
export const targetOfDocument = (body: Pick<LockDocument, 'namespace' | 'granularity' | 'key'>): LockTarget =>
  targetOfKey(body.namespace, body.granularity, body.key);

/** Wakes every channel waiter a write reserved the lock for, and tells those whose ticket it dropped. Best effort: the sweeper wakes again, and a channel's own timeout tells a waiter that hears nothing. */
export async function tellWaiters(context: EngineContext, written: readonly WrittenEffects[]): Promise<void> {
  for (const { lock, effects } of written) {
    for (const ticket of effects.reserved) if (lock && ticket.wake) await wake(context, lock, ticket).catch(() => undefined);
    for (const ticket of effects.dropped) {
      if (!ticket.wake) continue;
      const key = lock?.body.key ?? ticket.ticket;
      const why =
        ticket.reservedUntil !== undefined
          ? `The lock on ${key} was reserved for ticket ${ticket.ticket} until ${new Date(ticket.reservedUntil).toISOString()}, and it was not claimed in time; nothing is held`
          : undefined;
      await tellFailure(context, ticket, new LockWaitExpiredError({ ticket: ticket.ticket, key }, why)).catch(() => undefined);
    }
  }
}

/** Whether a message went out (none without a notifier or a channel). */
export async function tellFailure(context: EngineContext, ticket: StoredTicket, error: { name: string; message: string }): Promise<boolean> {
  const { notifier } = context.settings;
  if (!notifier || !ticket.wake) return false;
  const message: WakeMessage = { outcome: 'failed', ticket: ticket.ticket, error: error.name, message: error.message };
  await notifier.notify(ticket.wake, message);
  return true;
}

/**
 * Tells the waiter of `ticket`, reserved in `lock`, to claim its turn. A channel that says nobody waits
 * there any more gets its reservation cancelled, which serves the next waiter: nothing was granted,
 * so nothing has to be given back.
 */
export async function wake(context: EngineContext, lock: StoredLock, ticket: StoredTicket): Promise<'delivered' | 'gone' | 'skipped'> {
  const { notifier } = context.settings;
  if (!notifier || !ticket.wake || ticket.reservedUntil === undefined) return 'skipped';
  const message: WakeMessage = {
    outcome: 'ready',
    ticket: ticket.ticket,
    reservedUntil: ticket.reservedUntil,
    target: targetOfDocument(lock.body),
    mode: ticket.mode === 'X' ? 'exclusive' : 'shared',
    owner: ticket.owner,
    ...(ticket.request !== null ? { requestId: ticket.request } : {}),
    // The claim is the same acquire again: a semaphore's names its permits too.
    ...(ticket.permits !== undefined && lock.body.permitLimit !== undefined ? { permits: { limit: lock.body.permitLimit, count: ticket.permits } } : {}),
  };
  const outcome = await notifier.notify(ticket.wake, message);
  if (outcome === 'gone') await cancelReservation(context, lock, ticket);
  return outcome;
}

/** The waiter's channel is gone: its ticket leaves, in one conditional write decided on the primary's version, if that still shows the same ticket and channel. */
async function cancelReservation(context: EngineContext, lock: StoredLock, gone: StoredTicket): Promise<void> {
  const { settings, store } = context;
  let current: StoredLock | null = lock;
  await writeUntilSettled(context, keepingBudget(settings), [lock.docId], {
    decide(_, now) {
      const ticket = current?.body.queue?.find((waiter) => waiter.ticket === gone.ticket);
      // A later delivery of the call may have taken the ticket over with a channel of its own.
      if (!current || !ticket || JSON.stringify(ticket.wake) !== JSON.stringify(gone.wake)) return [];
      const queue = (current.body.queue ?? []).filter((waiter) => waiter !== ticket);
      const op = replaceOp(current, { ...current.body, docId: current.docId }, settleFences(current), now, settings, current.body.lockedBelow === true, {
        queue,
        nextPosition: current.body.nextPosition ?? 0,
      });
      return [{ item: lock.docId, op }];
    },
    applied() {
      current = null;
    },
    async reread(changed) {
      current = (await store.readPrimary(changed)).get(lock.docId) ?? null;
      return changed;
    },
    keysOf: () => [lock.body.key],
  });
}
