/**
 * Waiting in a lock's queue inside the acquire call (`waitMs`): look at the document until the lock
 * is handed over to our ticket, serving the queue ourselves when the holder's lease has run out.
 * A look is a realtime read, much cheaper than the write attempts of a caller that polls; the grant
 * still rests on the primary's word or on our own conditional write.
 */
import { LockHeldError } from '../errors.js';
import { isLive, noteOf, replaceOp, settleFences, withoutNote, writtenLock } from '../lock-document.js';
import type { AcquireRequest, ConflictingKey, LockDocument, PlannedKey, Queued, StoredTicket } from '../model.js';
import { handOver, ticketLive } from '../queue.js';
import type { StoredLock, WriteOp } from '../store.js';
import { writeUntilSettled } from '../write-loop.js';
import { type EngineContext, keepingBudget } from './context.js';

const holds = (lock: StoredLock | null | undefined, leaseId: string): lock is StoredLock =>
  lock?.body.holders.some((holder) => holder.lease === leaseId) ?? false;
const queues = (lock: StoredLock | null | undefined, leaseId: string, now: number, skewMs: number): boolean =>
  lock?.body.queue?.some((ticket) => ticket.ticket === leaseId && ticketLive(ticket, now, skewMs)) ?? false;

/** Returns the document holding our lease, as the primary (or our own write) has it; LockHeldError once `deadline` passes, or if the ticket was dropped. */
export async function waitForTurn(
  context: EngineContext,
  key: PlannedKey,
  leaseId: string,
  deadline: number,
  seen: StoredLock | undefined,
): Promise<StoredLock> {
  const { settings, store } = context;
  const skew = settings.maxClockSkewMs;
  let last = seen ?? null;
  for (;;) {
    const now = settings.now();
    if (now >= deadline) throw stillWaiting(context, key, last);
    await settings.sleep(Math.min(lookAgainIn(context, last, leaseId, now), deadline - now));
    let current = (await store.read([key.docId])).get(key.docId) ?? null;
    const at = settings.now();
    // A plain read may lag: our grant, or our ticket gone, counts only on the primary's word.
    if (holds(current, leaseId) || !queues(current, leaseId, at, skew)) {
      current = (await store.readPrimary([key.docId])).get(key.docId) ?? null;
      if (holds(current, leaseId)) return current;
      if (!queues(current, leaseId, settings.now(), skew)) throw stillWaiting(context, key, current);
    }
    last = current;
    const served = current && (await serveIfDue(context, current, leaseId));
    if (served) return served;
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
 * The holders' leases ran out (or a waiter's pause is over) and nobody wrote the document since: any
 * waiter may serve the queue, in order, with one conditional write. Returns the document if that write made us a holder.
 */
async function serveIfDue(context: EngineContext, lock: StoredLock, leaseId: string): Promise<StoredLock | undefined> {
  const { settings } = context;
  const now = settings.now();
  const settled = settleFences(lock);
  const live = settled.filter((holder) => isLive(holder, now, settings.maxClockSkewMs));
  const served = handOver(live, lock.body.queue, now, settings.maxClockSkewMs);
  if (live.length === settled.length && served.granted.length === 0 && served.dropped.length === 0) return undefined;
  let mine: StoredLock | undefined;
  await writeUntilSettled(context, settings.contentionBudgetMs, [lock], {
    decide: (pending, at) => pending.map((item) => ({ item, op: replaceOp(item, { ...item.body, docId: item.docId }, live, at, settings.maxClockSkewMs) })),
    applied(_, outcome, op) {
      if (op.kind === 'delete') return;
      const written = writtenLock(outcome, (op as Extract<WriteOp, { body: LockDocument }>).body);
      if (holds(written, leaseId)) mine = written;
    },
    // Someone else wrote it: they served the queue, or the next look tells.
    reread: async () => [],
    keysOf: () => [lock.body.key],
  });
  return mine;
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
  return new LockHeldError(undefined, { conflicts: [conflict], retryAfterMs: context.settings.retry.baseDelayMs });
}

/**
 * A waiter that gives up leaves the queue; if the lock was handed over to it meanwhile, it gives the
 * lock up, which serves the next waiters. Either way in one conditional write, re-read from the primary on a race.
 */
export async function leaveQueue(context: EngineContext, key: PlannedKey, leaseId: string): Promise<void> {
  const { settings, store } = context;
  let current = (await store.readPrimary([key.docId])).get(key.docId) ?? null;
  await writeUntilSettled(context, keepingBudget(settings), [key.docId], {
    decide(_, now) {
      if (!current) return [];
      const inQueue = current.body.queue?.some((ticket) => ticket.ticket === leaseId) ?? false;
      // Only what the ticket became: a holder of ours that a write of our own put there (and that may
      // carry an earlier delivery's holder to give back) is the rollback's to remove.
      const fromTicket = current.body.holders.some((holder) => holder.lease === leaseId && holder.ticket !== undefined);
      // What the ticket became, taken over since by a later delivery of the same call: that delivery
      // keeps a note to give it back if it fails, which would hand the key to us, gone (schedule 910443734).
      const noted = current.body.holders.some((holder) => holder.lease !== leaseId && noteOf(holder.restores, leaseId) !== undefined);
      if (!inQueue && !fromTicket && !noted) return [];
      const without: StoredLock = { ...current, body: { ...current.body, queue: (current.body.queue ?? []).filter((ticket) => ticket.ticket !== leaseId) } };
      const holders = settleFences(current)
        .filter((holder) => !(holder.lease === leaseId && holder.ticket !== undefined))
        .map((holder) => withoutNote(holder, leaseId));
      return [{ item: key.docId, op: replaceOp(without, { ...current.body, docId: current.docId }, holders, now, settings.maxClockSkewMs) }];
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

export function queuedOutcome(request: AcquireRequest, ticket: StoredTicket, lock: StoredLock | undefined): Queued {
  const ahead = lock?.body.queue?.filter((other) => other.position < ticket.position).length ?? 0;
  return { status: 'queued', ticket: ticket.ticket, ahead, expiresAt: ticket.expiresAt, target: request.target, mode: request.mode, owner: request.owner };
}
