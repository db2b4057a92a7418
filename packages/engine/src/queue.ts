/**
 * The fair queue of one lock document, as pure decisions: who is served next, who drops out. Every
 * write that changes a document's holders goes through `handOver` (lock-document.ts, replaceOp), so
 * whoever frees a lock (a release, an acquire that takes over an expired lease, the sweeper) serves
 * the next waiters in that same conditional write. Serving is a reservation, never a grant: the
 * waiter becomes a holder only by its own conditional write, its claim (docs/protocol.md).
 */
import type { StoredHolder, StoredTicket } from './model.js';
import { fits, type Occupant } from './permits.js';
import type { LockSettings } from './settings.js';

/** What a decision over a document needs of the settings: the clock skew allowance, and the queue's timings. */
export type Timing = Pick<LockSettings, 'maxClockSkewMs' | 'queue'>;

/** A ticket, like a lease, ends for others only once the clock skew allowance has also passed. */
export const ticketLive = (ticket: StoredTicket, now: number, skewMs: number): boolean =>
  now < ticket.expiresAt + skewMs && (ticket.reservedUntil === undefined || now < ticket.reservedUntil + skewMs);

/** Reserved for its waiter, as others see it: nobody else may take what it holds the place of. */
export const reservedFor = (ticket: StoredTicket, now: number, skewMs: number): boolean =>
  ticket.reservedUntil !== undefined && ticketLive(ticket, now, skewMs);

/** Its waiter may still claim it: by the claimer's own clock, before the reservation's end (no skew allowance in its favour). */
export const claimable = (ticket: StoredTicket | undefined, now: number): boolean =>
  ticket?.reservedUntil !== undefined && now < ticket.reservedUntil && now < ticket.expiresAt;

export interface HandOver {
  /** The waiters still queued, in order, the reserved ones among them. */
  queue: StoredTicket[];
  /** The tickets this write reserves: their waiters are woken to claim. */
  reserved: StoredTicket[];
  /** Tickets that ran out unserved, or whose reservation lapsed unclaimed, and leave with this write. */
  dropped: StoredTicket[];
}

/**
 * Serves the queue in position order while its head can share the lock with the live holders and
 * with the waiters reserved before it: a run of readers together, a writer alone. It stops at the
 * first waiter that cannot be served, so nobody overtakes it (a queued writer keeps new readers out).
 * A semaphore's waiters are served while their permits fit in `permitLimit` with those of the live
 * holders and of the waiters reserved before them (permits.ts): a small request behind a large one waits too.
 * `holders` must be the live ones; expired tickets and lapsed reservations drop out.
 */
export function handOver(
  holders: readonly StoredHolder[],
  queue: readonly StoredTicket[] | undefined,
  now: number,
  timing: Timing,
  permitLimit?: number,
): HandOver {
  if (!queue || queue.length === 0) return { queue: [], reserved: [], dropped: [] };
  const { maxClockSkewMs: skewMs, queue: settings } = timing;
  const dropped: StoredTicket[] = [];
  const waiting: StoredTicket[] = [];
  for (const ticket of queue) (ticketLive(ticket, now, skewMs) ? waiting : dropped).push(ticket);
  waiting.sort((a, b) => a.position - b.position);
  const occupants: Occupant[] = [...holders];
  const reserved: StoredTicket[] = [];
  const served = waiting.map((ticket) => ticket);
  for (const [index, ticket] of waiting.entries()) {
    if (ticket.reservedUntil !== undefined) {
      occupants.push(ticket);
      continue;
    }
    if (ticket.retryAt !== undefined && now < ticket.retryAt) break;
    if (!fits(ticket, occupants, permitLimit)) break;
    const { retryAt: _, ...kept } = ticket;
    const reservation: StoredTicket = {
      ...kept,
      reservedUntil: Math.min(now + settings.claimWindowMs, ticket.expiresAt),
      ...(ticket.wake ? { rewakeAt: now + settings.rewakeAfterMs } : {}),
    };
    served[index] = reservation;
    reserved.push(reservation);
    occupants.push(ticket);
  }
  return { queue: served, reserved, dropped };
}

/** The holder a claimed reservation becomes: the claimer's lease (its fencing token the claim's write), with the ticket it claimed. */
export function holderFrom(ticket: StoredTicket, fresh: StoredHolder): StoredHolder {
  const { reservedUntil: _, rewakeAt: __, retryAt: ___, ...kept } = ticket;
  return { ...fresh, ticket: kept };
}

/** A waiter's ticket in this queue, by its id. */
export const ticketOf = (queue: readonly StoredTicket[] | undefined, ticketId: string): StoredTicket | undefined =>
  queue?.find((ticket) => ticket.ticket === ticketId);

/** How many live waiters are ahead of `position`. */
export const aheadOf = (queue: readonly StoredTicket[] | undefined, position: number): number =>
  queue?.filter((ticket) => ticket.position < position).length ?? 0;

/** The earliest instant at which the queue needs someone's attention without any write: a ticket or reservation running out, one to try again, a channel waiter to wake again. */
export function queueAttentionAt(queue: readonly StoredTicket[] | undefined): number | undefined {
  if (!queue || queue.length === 0) return undefined;
  return Math.min(
    ...queue.map((ticket) =>
      Math.min(
        ticket.expiresAt,
        ticket.retryAt ?? Number.POSITIVE_INFINITY,
        ticket.reservedUntil ?? Number.POSITIVE_INFINITY,
        ticket.rewakeAt ?? Number.POSITIVE_INFINITY,
      ),
    ),
  );
}
