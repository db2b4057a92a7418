/**
 * An operator's drain: every waiter leaves the target's queue. The audit record first, then one
 * conditional write per key that empties its queue, then each channel waiter it took out is told that
 * its wait failed. Cleared first, told after: a waiter told must really be out (told first, a waiter
 * whose ticket survived a failed write could still be handed the lock). A waiter in a call sees its
 * ticket gone on the primary and its call answers LockHeldError.
 */
import { LockWaitExpiredError } from '../errors.js';
import { planKeys } from '../keys.js';
import { drainOp } from '../lock-document.js';
import type { Drained, StoredTicket } from '../model.js';
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
    const why = `Ticket ${ticket.ticket} for ${key} was drained by ${request.by} (${request.reason}); nothing is held`;
    const sent = await tellFailure(context, ticket, new LockWaitExpiredError({ ticket: ticket.ticket, key }, why)).catch(() => false);
    if (sent) told++;
  }
  const { target, by, reason, at } = record;
  return { target, by, reason, at, dropped: dropped.map(({ key, ticket }) => ({ key, ticket: ticket.ticket, owner: ticket.owner })), told };
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
        const decision = drainOp(lock, now, context.settings);
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
