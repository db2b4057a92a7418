/**
 * After a write served a lock's queue: the waiters woken by a channel learn their outcome. A waiter
 * granted by the write gets its grant completed (what is above or below the target checked, as any
 * acquire's is) and sent; one whose ticket ran out is told it failed. Whoever made the write does
 * this at once; the sweeper does it again for a grant whose delivery did not finish (holder
 * `delivery` still set), so a crash between the hand-over and the notification loses nothing.
 */
import { createHmac } from 'node:crypto';
import { LockHeldError, LockWaitExpiredError } from '../errors.js';
import { rulesFor } from '../granularity/index.js';
import { encodeToken, hintFor } from '../lease-token.js';
import { fenceOf, isLive, removeLeaseOp, replaceOp, settleFences, writtenLock } from '../lock-document.js';
import type { Grant, LockDocument, LockTarget, StoredHolder, StoredTicket } from '../model.js';
import type { QueueEffects, StoredLock, WriteOp } from '../store.js';
import type { WakeMessage } from '../wake.js';
import { writeUntilSettled } from '../write-loop.js';
import { type EngineContext, keepingBudget } from './context.js';

export interface WrittenEffects {
  /** The document as the write left it (null: deleted). */
  lock: StoredLock | null;
  effects: QueueEffects;
}

/**
 * The lease secret of a ticket's grant. With a signing key it is derived from the ticket (nothing
 * secret is stored); without one, the ticket of a channel waiter carries it.
 */
export function ticketSecret(settings: EngineContext['settings'], ticketId: string, stored?: string): string | undefined {
  if (settings.tokenSigningKey) return createHmac('sha256', settings.tokenSigningKey).update(`ticket.${ticketId}`).digest('base64url');
  return stored;
}

/** The target a single-key lock document stands for. */
export function targetOfDocument(body: LockDocument): LockTarget {
  if (body.granularity === 'document') return { namespace: body.namespace, granularity: 'document', ids: [body.key] };
  if (body.granularity === 'tree') return { namespace: body.namespace, granularity: 'tree', path: body.key };
  return { namespace: body.namespace, granularity: 'global' };
}

/** Tells every channel waiter a write granted, dropped, or pruned a grant of that was never told. Best effort: what fails here the sweeper tells again (a grant) or the channel's own timeout tells (a dropped ticket, a lost grant). */
export async function tellWaiters(context: EngineContext, written: readonly WrittenEffects[]): Promise<void> {
  for (const { lock, effects } of written) {
    for (const holder of effects.granted) {
      if (lock && holder.delivery !== undefined && holder.ticket?.wake) await deliverGrant(context, lock, holder.lease, holder.delivery).catch(() => undefined);
    }
    for (const ticket of effects.dropped) {
      if (!ticket.wake) continue;
      const key = lock?.body.key ?? ticket.ticket;
      await tellFailure(context, ticket, new LockWaitExpiredError(undefined, { ticket: ticket.ticket, key })).catch(() => undefined);
    }
    for (const holder of effects.lost ?? []) await tellLost(context, holder, lock?.body.key ?? holder.lease);
  }
}

/** A grant whose lease ran out before its waiter heard of it: the waiter hears it failed. */
export async function tellLost(context: EngineContext, holder: StoredHolder, key: string): Promise<void> {
  if (!holder.ticket?.wake || holder.delivery === undefined) return;
  await tellFailure(context, holder.ticket, {
    name: 'LeaseLostError',
    message: `The lock on ${key} was handed over to ticket ${holder.lease}, but its lease ran out before the grant could be delivered`,
  }).catch(() => undefined);
}

async function tellFailure(context: EngineContext, ticket: StoredTicket, error: { name: string; message: string }): Promise<void> {
  const { notifier } = context.settings;
  if (!notifier || !ticket.wake) return;
  const message: WakeMessage = { outcome: 'failed', ticket: ticket.ticket, error: error.name, message: error.message };
  await notifier.notify(ticket.wake, message);
}

/**
 * Completes and sends the grant of `leaseId`, handed over in `lock` (the primary's version, or the
 * write's). `attempt` is the delivery under way: only the first may give the lock back when the
 * channel says nobody waits any more, since a later one may race a delivery that did arrive.
 */
export async function deliverGrant(
  context: EngineContext,
  lock: StoredLock,
  leaseId: string,
  attempt: number,
): Promise<'delivered' | 'gone' | 'requeued' | 'skipped'> {
  const { settings } = context;
  const holder = lock.body.holders.find((candidate) => candidate.lease === leaseId);
  const ticket = holder?.ticket;
  if (!holder || !ticket?.wake || !settings.notifier) return 'skipped';
  const target = targetOfDocument(lock.body);
  const mode = holder.mode === 'X' ? 'exclusive' : 'shared';
  let current = lock;
  const confirm = rulesFor(target.granularity).confirm;
  if (confirm) {
    try {
      [current] = (await confirm(context, { target: target as never, mode, ttlMs: ticket.ttlMs, leaseId, locks: [lock], deadline: settings.now() })) as [
        StoredLock,
      ];
    } catch (error) {
      if (!(error instanceof LockHeldError)) throw error;
      // Only the first delivery may put the grant back in the queue: a later one may race a delivery
      // that did go out (its answer lost), so the grant stays and, if it is never told, runs out and is told lost.
      if (attempt > 1) return 'skipped';
      await requeue(context, lock, leaseId);
      return 'requeued';
    }
  }
  const mine = current.body.holders.find((candidate) => candidate.lease === leaseId);
  const secret = ticketSecret(settings, leaseId, ticket.secret);
  // A grant is sent only with at least half its TTL left, as any grant; else the sweeper tells the waiter it was lost once it runs out.
  if (!mine || !secret || mine.expiresAt - settings.now() < ticket.ttlMs / 2) return 'skipped';
  const fencingToken = fenceOf(mine, current);
  const grant: Grant = {
    leaseToken: encodeToken(
      { leaseId, target, mode, hints: [hintFor(current)], expiresAt: mine.expiresAt, grantedAt: Math.round(mine.grantedAt) },
      secret,
      settings.tokenSigningKey,
    ),
    leaseId,
    fencingToken,
    expiresAt: mine.expiresAt,
    ttlMs: ticket.ttlMs,
    target,
    mode,
    owner: mine.owner,
    keys: [{ key: current.body.key, mode: mine.mode, fencingToken }],
    reused: false,
    waitedMs: Math.max(0, mine.grantedAt - ticket.queuedAt),
  };
  const outcome = await settings.notifier.notify(ticket.wake, { outcome: 'granted', ticket: leaseId, grant });
  if (outcome === 'delivered') await changeHolder(context, current, leaseId, (found) => (found.delivery === undefined ? undefined : withoutDelivery(found)));
  else if (attempt === 1) await giveBackUndelivered(context, current, leaseId);
  return outcome;
}

const withoutDelivery = (holder: StoredHolder): StoredHolder => {
  const { delivery: _, ...rest } = holder;
  return rest;
};

/**
 * One conditional write to the document of the handed-over holder `leaseId`, decided anew on the
 * primary's version whenever the document changed meanwhile; `decide` returns nothing when there is
 * nothing (left) to do. Returns the document as written (null: deleted), or as last read.
 */
async function rewrite(
  context: EngineContext,
  lock: StoredLock,
  leaseId: string,
  decide: (current: StoredLock, holder: StoredHolder, now: number) => WriteOp | undefined,
): Promise<StoredLock | null> {
  const { settings, store } = context;
  let current: StoredLock | null = lock;
  await writeUntilSettled(context, keepingBudget(settings), [lock.docId], {
    decide(_, now) {
      const holder = current?.body.holders.find((candidate) => candidate.lease === leaseId);
      const op = current && holder ? decide(current, holder, now) : undefined;
      return op ? [{ item: lock.docId, op }] : [];
    },
    applied(_, outcome, op) {
      current = op.kind === 'delete' ? null : writtenLock(outcome, (op as Extract<WriteOp, { body: LockDocument }>).body);
    },
    async reread(changed) {
      current = (await store.readPrimary(changed)).get(lock.docId) ?? null;
      return changed;
    },
    keysOf: () => [lock.body.key],
  });
  return current;
}

/** Our holder as `change` makes it (undefined: unchanged), its fencing token kept. */
function changeHolder(context: EngineContext, lock: StoredLock, leaseId: string, change: (holder: StoredHolder) => StoredHolder | undefined) {
  const skew = context.settings.maxClockSkewMs;
  return rewrite(context, lock, leaseId, (current, holder, now) => {
    const changed = change(holder);
    if (!changed) return undefined;
    const holders = settleFences(current).map((candidate) => (candidate.lease === leaseId ? { ...changed, fence: candidate.fence } : candidate));
    return replaceOp(current, { ...current.body, docId: current.docId }, holders, now, skew);
  });
}

/** The channel says nobody waits: the lock goes to the next waiters, unless a second delivery has started meanwhile. */
async function giveBackUndelivered(context: EngineContext, lock: StoredLock, leaseId: string): Promise<void> {
  const skew = context.settings.maxClockSkewMs;
  await rewrite(context, lock, leaseId, (current, holder, now) => (holder.delivery === 1 ? removeLeaseOp(current, leaseId, now, skew) : undefined));
}

/** Handed the lock while what is above or below still blocked it: back to the head of the queue, tried again after a pause (nobody behind it is served meanwhile). */
async function requeue(context: EngineContext, lock: StoredLock, leaseId: string): Promise<void> {
  const { settings } = context;
  await rewrite(context, lock, leaseId, (current, holder, now) => {
    // A redelivery noted meanwhile may have told it: then it is no longer ours to put back.
    if (!holder.ticket || holder.delivery !== 1) return undefined;
    const ticket: StoredTicket = { ...holder.ticket, retryAt: now + settings.queue.retryBlockedMs };
    const others = settleFences(current).filter((candidate) => candidate.lease !== leaseId && isLive(candidate, now, settings.maxClockSkewMs));
    const back: StoredLock = { ...current, body: { ...current.body, queue: [ticket, ...(current.body.queue ?? [])] } };
    return replaceOp(back, { ...current.body, docId: current.docId }, others, now, settings.maxClockSkewMs);
  });
}

/** The sweeper's second delivery of a grant not yet told: it first notes the attempt (so the first may no longer give the lock back), then delivers. */
export async function redeliver(context: EngineContext, lock: StoredLock, leaseId: string): Promise<void> {
  let attempt = 0;
  const noted = await changeHolder(context, lock, leaseId, (holder) => {
    if (holder.delivery === undefined) return undefined;
    attempt = holder.delivery + 1;
    return { ...holder, delivery: attempt };
  });
  // Only a note that landed counts: a version read before the first delivery finished may still show it under way.
  const mine = noted?.body.holders.find((holder) => holder.lease === leaseId);
  if (noted && attempt > 1 && mine?.delivery === attempt) await deliverGrant(context, noted, leaseId, attempt);
}
