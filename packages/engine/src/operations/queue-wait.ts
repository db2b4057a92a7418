/**
 * Waiting in a lock's queue inside the acquire call (`waitMs`): look at the document until the lock
 * is reserved for our ticket, serving the queue ourselves when the holder's lease has run out. A look
 * is a realtime read, much cheaper than the write attempts of a caller that polls; the grant rests on
 * our own claim, a conditional write on the version the look showed (acquire.ts).
 */
import { LockHeldError } from '../errors.js';
import { drainNoteOf, isLive, noteOf, removeLeaseOp, replaceOp, settleFences, withoutNote, writtenLock } from '../lock-document.js';
import type { AcquireRequest, ConflictingKey, PlannedKey, Queued, StoredHolder, StoredTicket } from '../model.js';
import { claimable, handOver, ticketLive, ticketOf } from '../queue.js';
import type { StoredLock } from '../store.js';
import { writeUntilSettled } from '../write-loop.js';
import { type EngineContext, keepingBudget } from './context.js';
import { drainedError } from './drain.js';

const queues = (lock: StoredLock | null | undefined, ticketId: string, now: number, skewMs: number): boolean => {
  const ticket = ticketOf(lock?.body.queue, ticketId);
  return ticket !== undefined && ticketLive(ticket, now, skewMs);
};

/**
 * Returns the document as a look found it reserved for our ticket (the claim is then a conditional
 * write on that version: a copy that lags only makes it fail). LockHeldError once `deadline` passes,
 * or once the primary shows the ticket gone; LockWaitExpiredError when the primary shows that an
 * operator's drain took it out (the call ends: a drained waiter is out).
 */
export async function waitForReservation(
  context: EngineContext,
  key: PlannedKey,
  ticketId: string,
  deadline: number,
  seen: StoredLock | undefined,
): Promise<StoredLock> {
  const { settings, store } = context;
  const skew = settings.maxClockSkewMs;
  let last = seen ?? null;
  for (;;) {
    const now = settings.now();
    if (last && claimable(ticketOf(last.body.queue, ticketId), now)) return last;
    if (now >= deadline) throw stillWaiting(context, key, last);
    await settings.sleep(Math.min(lookAgainIn(context, last, ticketId, now), deadline - now));
    let current = (await store.read([key.docId])).get(key.docId) ?? null;
    // A plain read may lag: our ticket gone counts only on the primary's word.
    if (!queues(current, ticketId, settings.now(), skew)) {
      current = (await store.readPrimary([key.docId])).get(key.docId) ?? null;
      const drained = drainNoteOf(current, ticketId);
      if (drained) throw drainedError(key.key, ticketId, drained);
      if (!queues(current, ticketId, settings.now(), skew)) throw stillWaiting(context, key, current);
    }
    last = (current && (await serveIfDue(context, current))) ?? current;
  }
}

/**
 * When to look again: soon at the head of the queue behind a hold that has just begun (most holds are
 * short), less often the longer the hold has lasted and the more waiters are ahead (a quarter of the
 * hold so far per waiter ahead), between the settings' bounds. Short holds hand over fast; long ones
 * cost few reads.
 */
function lookAgainIn(context: EngineContext, lock: StoredLock | null, leaseId: string, now: number): number {
  const { minMs, maxMs } = context.settings.queue.pollMs;
  const ours = lock?.body.queue?.find((ticket) => ticket.ticket === leaseId);
  const ahead = ours ? (lock?.body.queue ?? []).filter((ticket) => ticket.position < ours.position).length : 0;
  const heldSince = Math.min(now, ...(lock?.body.holders ?? []).map((holder) => holder.grantedAt));
  return Math.max(minMs, Math.min(maxMs, ((now - heldSince) / 4) * (ahead + 1)));
}

/**
 * The holders' leases ran out (or a reservation lapsed, or a waiter's pause is over) and nobody wrote
 * the document since: any waiter may serve the queue, in order, with one conditional write. Returns
 * the document as that write left it.
 */
async function serveIfDue(context: EngineContext, lock: StoredLock): Promise<StoredLock | undefined> {
  const { settings } = context;
  const now = settings.now();
  const settled = settleFences(lock);
  const live = settled.filter((holder) => isLive(holder, now, settings.maxClockSkewMs));
  const served = handOver(live, lock.body.queue, now, settings, lock.body.permitLimit);
  if (live.length === settled.length && served.reserved.length === 0 && served.dropped.length === 0) return undefined;
  let written: StoredLock | undefined;
  await writeUntilSettled(context, settings.contentionBudgetMs, [lock], {
    decide: (pending, at) => pending.map((item) => ({ item, op: replaceOp(item, { ...item.body, docId: item.docId }, live, at, settings) })),
    applied(_, outcome, op) {
      if (op.kind !== 'delete') written = writtenLock(outcome, op.body);
    },
    // Someone else wrote it: they served the queue, or the next look tells.
    reread: async () => [],
    keysOf: () => [lock.body.key],
  });
  return written;
}

function stillWaiting(context: EngineContext, key: PlannedKey, lock: StoredLock | null): LockHeldError {
  const now = context.settings.now();
  const skew = context.settings.maxClockSkewMs;
  const holders = (lock?.body.holders ?? []).filter((holder) => isLive(holder, now, skew));
  const conflict: ConflictingKey = {
    key: key.key,
    granularity: key.granularity,
    requestedMode: key.mode,
    holders: holders.map(({ owner, mode, expiresAt }) => ({ owner, mode, expiresAt })),
    ...(holders.length === 0 ? { reason: 'queued_waiters' as const } : {}),
  };
  return new LockHeldError({ conflicts: [conflict], retryAfterMs: context.settings.retry.baseDelayMs });
}

/**
 * A waiter that gives up leaves the queue, its reservation with it (which serves the next waiters),
 * in one conditional write, re-read from the primary on a race. A holder of ours, made by a claim of
 * ours, is the rollback's to remove: this never touches a holder.
 */
export async function leaveQueue(context: EngineContext, key: PlannedKey, ticketId: string): Promise<void> {
  const { settings, store } = context;
  let current = (await store.readPrimary([key.docId])).get(key.docId) ?? null;
  await writeUntilSettled(context, keepingBudget(settings), [key.docId], {
    decide(_, now) {
      if (!current) return [];
      const inQueue = ticketOf(current.body.queue, ticketId) !== undefined;
      // A holder of ours, taken over since by a later delivery of the same call: that delivery keeps a
      // note to give it back if it fails, which would hand the key to us, gone (schedule 910443734).
      const noted = current.body.holders.some((holder) => holder.lease !== ticketId && noteOf(holder.restores, ticketId) !== undefined);
      if (!inQueue && !noted) return [];
      const queue = (current.body.queue ?? []).filter((ticket) => ticket.ticket !== ticketId);
      const holders = settleFences(current).map((holder) => withoutNote(holder, ticketId));
      const op = replaceOp(current, { ...current.body, docId: current.docId }, holders, now, settings, current.body.lockedBelow === true, {
        queue,
        nextPosition: current.body.nextPosition ?? 0,
      });
      return [{ item: key.docId, op }];
    },
    applied() {
      current = null;
    },
    async reread(changed) {
      current = (await store.readPrimary(changed)).get(key.docId) ?? null;
      return changed;
    },
    keysOf: () => [key.key],
  });
}

/**
 * A claim of ours that failed on what is above or below the target while the call may still wait:
 * our holder leaves and our ticket goes back to its place (`retryAt`; nobody behind it is served
 * meanwhile), in one conditional write on the primary's version. Returns the document as it left it;
 * undefined if our holder was gone already (a later delivery of the call took it over).
 */
export async function giveTicketBack(context: EngineContext, lock: StoredLock, leaseId: string): Promise<StoredLock | undefined> {
  const { settings, store } = context;
  let current: StoredLock | null = lock;
  let written: StoredLock | undefined;
  await writeUntilSettled(context, keepingBudget(settings), [lock.docId], {
    decide(_, now) {
      const op = current && removeLeaseOp(current, leaseId, now, settings, 'requeue');
      return op && current?.body.holders.some((holder) => holder.lease === leaseId) ? [{ item: lock.docId, op }] : [];
    },
    applied(_, outcome, op) {
      current = null;
      if (op.kind !== 'delete') written = writtenLock(outcome, op.body);
    },
    async reread(changed) {
      current = (await store.readPrimary(changed)).get(lock.docId) ?? null;
      return changed;
    },
    keysOf: () => [lock.body.key],
  });
  return written;
}

export function queuedOutcome(request: AcquireRequest, ticket: StoredTicket, lock: StoredLock | undefined): Queued {
  const ahead = lock?.body.queue?.filter((other) => other.position < ticket.position).length ?? 0;
  return {
    status: 'queued',
    ticket: ticket.ticket,
    ahead,
    expiresAt: ticket.expiresAt,
    ...(ticket.reservedUntil !== undefined ? { reservedUntil: ticket.reservedUntil } : {}),
    target: request.target,
    mode: request.mode,
    owner: request.owner,
  };
}

/**
 * The answer to a `wake` call delivered again after its own claim: what the first delivery answered
 * (queued, the call's ticket), noting that it is claimed, so no wake-up follows. The ticket is the one
 * the holder claimed (or the holder it took over claimed: a wake-up delivered twice makes two claims).
 */
export function claimedOutcome(request: AcquireRequest, holder: StoredHolder): Queued {
  let ticket: StoredTicket | undefined;
  for (let current: StoredHolder | null | undefined = holder; current && !ticket; current = current.restores) ticket = current.ticket;
  return {
    status: 'queued',
    ticket: ticket?.ticket ?? holder.lease,
    ahead: 0,
    expiresAt: ticket?.expiresAt ?? holder.expiresAt,
    target: request.target,
    mode: request.mode,
    owner: request.owner,
    claimed: true,
  };
}
