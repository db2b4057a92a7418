/**
 * An operator's drain: every waiter leaves the target's queue, and is out. The audit record first,
 * then one conditional write per key that empties its queue and leaves a note naming the waiters in
 * the call it took out, then each channel waiter it took out is told that its wait failed. Cleared
 * first, told after: a waiter told must really be out (told first, a waiter whose ticket survived a
 * failed write could still be handed the lock). A waiter in the call finds its ticket gone and the note
 * on the primary, and its call ends with the same LockWaitExpiredError; it never joins again.
 */
import { LockWaitExpiredError } from '../errors.js';
import { planKeys } from '../keys.js';
import { drainOp } from '../lock-document.js';
import type { Drained, DrainNote, StoredTicket } from '../model.js';
import type { AdminRequest } from '../requests.js';
import { writeUntilSettled } from '../write-loop.js';
import { recordAudit } from './audit.js';
import { type EngineContext, keepingBudget } from './context.js';
import { tellFailure } from './wake-waiters.js';

export async function drain(context: EngineContext, request: AdminRequest): Promise<Drained> {
  const record = await recordAudit(context, 'drain', request);
  const dropped = await emptyQueues(context, request);
  let told = 0;
  for (const { key, ticket } of dropped) {
    if (!ticket.wake) continue;
    const sent = await tellFailure(context, ticket, drainedError(key, ticket.ticket, request)).catch(() => false);
    if (sent) told++;
  }
  const { target, by, reason, at } = record;
  return { target, by, reason, at, dropped: dropped.map(({ key, ticket }) => ({ key, ticket: ticket.ticket, owner: ticket.owner })), told };
}

/** What a drained waiter hears, on its channel or as its call's answer. */
export function drainedError(key: string, ticket: string, { by, reason }: Pick<DrainNote, 'by' | 'reason'>): LockWaitExpiredError {
  return new LockWaitExpiredError({ ticket, key }, `Ticket ${ticket} for ${key} was drained by ${by} (${reason}); nothing is held`);
}

/** The tickets taken out, from the versions the writes applied to. Waiters are told here, not by the write loop (which would say "ran out"). */
async function emptyQueues(context: EngineContext, request: AdminRequest): Promise<Array<{ key: string; ticket: StoredTicket }>> {
  const docIds = planKeys(request.target, 'exclusive')
    .filter((key) => key.mode === 'X')
    .map((key) => key.docId);
  const read = await context.store.readPrimary(docIds);
  const locks = docIds.flatMap((docId) => read.get(docId) ?? []);
  const dropped: Array<{ key: string; ticket: StoredTicket }> = [];
  const quiet: EngineContext = { store: context.store, settings: context.settings };
  await writeUntilSettled(quiet, keepingBudget(context.settings), locks, {
    decide: (pending, now) =>
      pending.flatMap((lock) => {
        const decision = drainOp(lock, now, context.settings, request);
        return decision ? [{ item: lock, op: decision.op }] : [];
      }),
    applied: (lock, _, op) => {
      for (const ticket of op.queueEffects?.dropped ?? []) dropped.push({ key: lock.body.key, ticket });
    },
    reread: async (changed) => {
      const fresh = await context.store.readPrimary(changed.map((lock) => lock.docId));
      return changed.flatMap((lock) => fresh.get(lock.docId) ?? []);
    },
    keysOf: (pending) => pending.map((lock) => lock.body.key),
  });
  return dropped;
}
