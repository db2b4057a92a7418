/**
 * The fair queue of one lock document, as pure decisions: who is served next, who drops out. Every
 * write that changes a document's holders goes through `handOver` (lock-document.ts, replaceOp), so
 * whoever frees a lock (a release, an acquire that takes over an expired lease, the sweeper) grants
 * the next waiters in that same conditional write.
 */
import { compatible } from './compatibility.js';
import type { StoredHolder, StoredTicket } from './model.js';

/** A ticket, like a lease, ends for others only once the clock skew allowance has also passed. */
export const ticketLive = (ticket: StoredTicket, now: number, skewMs: number): boolean => now < ticket.expiresAt + skewMs;

export interface HandOver {
  /** Holders after the hand-over: the given ones, then the waiters granted (fence pending: this write's). */
  holders: StoredHolder[];
  /** The waiters still queued, in order. */
  queue: StoredTicket[];
  /** The holders made from tickets by this write. */
  granted: StoredHolder[];
  /** Tickets that ran out unserved and leave with this write. */
  dropped: StoredTicket[];
}

/**
 * Serves the queue in position order while its head can share the lock with the live holders and
 * with those served before it: a run of readers together, a writer alone. It stops at the first
 * waiter that cannot be served, so nobody overtakes it (a queued writer keeps new readers out).
 * `holders` must be the live ones; expired tickets drop out.
 */
export function handOver(holders: StoredHolder[], queue: readonly StoredTicket[] | undefined, now: number, skewMs: number): HandOver {
  if (!queue || queue.length === 0) return { holders, queue: [], granted: [], dropped: [] };
  const dropped: StoredTicket[] = [];
  const waiting: StoredTicket[] = [];
  for (const ticket of queue) (ticketLive(ticket, now, skewMs) ? waiting : dropped).push(ticket);
  waiting.sort((a, b) => a.position - b.position);
  const granted: StoredHolder[] = [];
  let served = 0;
  for (const ticket of waiting) {
    if (ticket.retryAt !== undefined && now < ticket.retryAt) break;
    if (![...holders, ...granted].every((holder) => compatible(ticket.mode, holder.mode))) break;
    granted.push(holderFor(ticket, now));
    served++;
  }
  return { holders: granted.length > 0 ? [...holders, ...granted] : holders, queue: waiting.slice(served), granted, dropped };
}

/** The holder a ticket becomes: its lease id and proof, a full TTL from this write, its fencing token this write's. */
export function holderFor(ticket: StoredTicket, now: number): StoredHolder {
  const { retryAt: _, ...kept } = ticket;
  return {
    lease: ticket.ticket,
    proof: ticket.proof,
    owner: ticket.owner,
    mode: ticket.mode,
    expiresAt: now + ticket.ttlMs,
    grantedAt: now,
    fence: null,
    request: ticket.request,
    call: ticket.call,
    ticket: kept,
    ...(ticket.wake ? { delivery: 1 } : {}),
  };
}

/** A waiter that is still waiting in this queue: either its ticket, or the holder its ticket became. */
export function placeOf(
  holders: readonly StoredHolder[],
  queue: readonly StoredTicket[] | undefined,
  ticketId: string,
): StoredTicket | StoredHolder | undefined {
  return holders.find((holder) => holder.lease === ticketId) ?? queue?.find((ticket) => ticket.ticket === ticketId);
}

/** How many live waiters are ahead of `position`. */
export const aheadOf = (queue: readonly StoredTicket[] | undefined, position: number): number =>
  queue?.filter((ticket) => ticket.position < position).length ?? 0;

/** The earliest instant at which the queue needs someone's attention without any write: a ticket running out, or one to try again. */
export function queueAttentionAt(queue: readonly StoredTicket[] | undefined): number | undefined {
  if (!queue || queue.length === 0) return undefined;
  return Math.min(...queue.map((ticket) => Math.min(ticket.expiresAt, ticket.retryAt ?? Number.POSITIVE_INFINITY)));
}
