/** Pure decisions over one lock document: who holds it, whether a request fits, what to write. */
import { encodable, type FencingToken, LARGEST_TOKEN, tokenAt, type WritePosition } from './fencing.js';
import type { ConflictingKey, DrainNote, HolderView, LockDocument, Permits, PlannedKey, StoredHolder, StoredTicket } from './model.js';
import { blockersOf, permitMismatch, permitsTaken } from './permits.js';
import { claimable, type HandOver, handOver, holderFrom, queueAttentionAt, reservedFor, type Timing, ticketLive } from './queue.js';

export type { Timing } from './queue.js';

import type { StoredLock, WriteOp, WriteOutcome } from './store.js';

export interface Claim {
  leaseId: string;
  proof: string;
  owner: string;
  requestId: string | null;
  /** Hash of the call's target, mode and owner (null without a requestId). */
  call: string | null;
  expiresAt: number;
  /**
   * Join the queue when the lock cannot be granted now (or others wait for it): the ticket to write.
   * With `wake`, the caller is not in the call to claim: it always queues, reserved at once when the
   * lock is free, and is woken to claim.
   */
  queue?: Omit<StoredTicket, 'position' | 'queuedAt'>;
  /** A semaphore's acquire: the permits its holder (and its ticket) takes, of the limit (permits.ts). */
  permits?: Permits;
  /** Work that runs once: the hash of the work the holder takes on (StoredHolder.work). */
  work?: string;
}

/** Seen by anyone but the holder, a lease ends only once the clock skew allowance has also passed. */
export const isLive = (holder: StoredHolder, now: number, skewMs: number): boolean => now < holder.expiresAt + skewMs;

/** A key the primary shows without our lease: who holds it live there instead (a conflict to answer with). */
export function lostKey(key: PlannedKey, lock: StoredLock | null | undefined, now: number, skewMs: number, reason?: ConflictingKey['reason']): ConflictingKey {
  const holders = (lock?.body.holders ?? []).filter((holder) => isLive(holder, now, skewMs));
  return {
    key: key.key,
    granularity: key.granularity,
    requestedMode: key.mode,
    holders: holders.map(({ owner, mode, expiresAt }) => ({ owner, mode, expiresAt })),
    ...(reason ? { reason } : {}),
  };
}

/** The pending holder (fence null) was inserted by the write that produced (term, seq): fix its token before changing the document. */
export function settleFences(lock: StoredLock): StoredHolder[] {
  return lock.body.holders.map((holder) => (holder.fence === null ? { ...holder, fence: fenceOf(holder, lock) } : holder));
}

/** A write past the encodable range is never granted (the engine rolls it back), but a holder it left behind gets the largest token. */
export function fenceOf(holder: StoredHolder, written: WritePosition): FencingToken {
  if (holder.fence !== null) return holder.fence;
  return encodable(written) ? tokenAt(written) : LARGEST_TOKEN;
}

/** A semaphore's document carries its limit: a write keeps it while anyone holds or waits there. */
type DocumentKey = Pick<PlannedKey, 'docId' | 'namespace' | 'granularity' | 'key'> & Pick<LockDocument, 'permitLimit'>;
/** A planned key as an acquire writes it: with the limit of a permits request. */
type AcquiredKey = PlannedKey & Pick<LockDocument, 'permitLimit'>;

/** The document's queue as a write leaves it: its waiters, and the counter their positions come from. */
export interface QueueState {
  queue: StoredTicket[];
  nextPosition: number;
}

const noQueue = (body: LockDocument | undefined): QueueState => ({ queue: body?.queue ?? [], nextPosition: body?.nextPosition ?? 0 });

/**
 * `lockedBelow` is explicit: a rewrite that dropped it would let a tree lock skip the locks below it.
 * `minExpiresAt` is when the sweeper must look at the document: a lease, a ticket or a reservation
 * running out, a waiter to try again, a reserved channel waiter to wake again, a drain's note to remove.
 */
export function lockDocument(
  key: DocumentKey,
  holders: StoredHolder[],
  now: number,
  lockedBelow: boolean,
  queued: QueueState = noQueue(undefined),
  drained: readonly DrainNote[] = [],
): LockDocument {
  const expiries = holders.map((holder) => holder.expiresAt);
  const attention = [...expiries, ...drained.map((note) => note.keepUntil)];
  const queueAt = queueAttentionAt(queued.queue);
  if (queueAt !== undefined) attention.push(queueAt);
  return {
    namespace: key.namespace,
    granularity: key.granularity,
    key: key.key,
    lockId: key.docId,
    holders,
    ...(attention.length > 0 ? { minExpiresAt: Math.min(...attention) } : {}),
    ...(holders.length > 0 ? { maxExpiresAt: Math.max(...expiries) } : {}),
    updatedAt: now,
    ...(lockedBelow ? { lockedBelow: true } : {}),
    ...(queued.queue.length > 0 ? { queue: queued.queue } : {}),
    ...(queued.nextPosition > 0 && queued.queue.length > 0 ? { nextPosition: queued.nextPosition } : {}),
    ...(key.permitLimit !== undefined && (holders.length > 0 || queued.queue.length > 0) ? { permitLimit: key.permitLimit } : {}),
    ...(drained.length > 0 ? { drained: [...drained] } : {}),
  };
}

export type Decision =
  | { kind: 'conflict'; conflict: ConflictingKey; clearsAt: number }
  /** Our lease is already there (an earlier round of this attempt landed): nothing to write. */
  | { kind: 'already-held'; lock: StoredLock }
  | { kind: 'write'; op: WriteOp; reused: boolean }
  /** Our ticket waits in the queue: `op` puts it there (none when an earlier round did), `ahead` waiters before it. */
  | { kind: 'queued'; op?: WriteOp; ticket: StoredTicket; ahead: number }
  /** A semaphore asked with another limit, or a plain lock and a semaphore on one document (null: a plain lock): refused, nothing to write. */
  | { kind: 'permits-mismatch'; key: string; requestedLimit: number | null; heldLimit: number | null }
  /** Joining would put more than `limit` live tickets in the queue (settings queue.maxTickets): refused, nothing to write. */
  | { kind: 'queue-full'; key: string; limit: number; queued: number }
  /** A waiter in the call whose ticket an operator's drain took out: it is out, and never joins again (T13). Nothing to write. */
  | { kind: 'drained'; note: DrainNote }
  /** A `wake` call delivered again after its own claim: `holder`, of this call, holds the lock. No second ticket, nothing to write. */
  | { kind: 'claimed'; holder: StoredHolder };

/**
 * Whether `claim` may take `key` given the document as read (null: absent), and the write that takes
 * it. Expired holders are dropped on the way: that is the immediate takeover, and the waiters queued
 * for the lock are served first (queue.ts): a caller never overtakes a live ticket. A claim with a
 * ticket joins the queue when it cannot be granted; one without is refused. A ticket of this call
 * that is reserved for it is claimed: this write, the waiter's own, is what grants it.
 */
export function decideAcquire(existing: StoredLock | null, planned: PlannedKey, claim: Claim, now: number, timing: Timing, mayTakeOverRetry = true): Decision {
  const skewMs = timing.maxClockSkewMs;
  const key: AcquiredKey = claim.permits ? { ...planned, permitLimit: claim.permits.limit } : planned;
  const fresh: StoredHolder = {
    lease: claim.leaseId,
    proof: claim.proof,
    owner: claim.owner,
    mode: key.mode,
    expiresAt: claim.expiresAt,
    grantedAt: now,
    fence: null,
    request: claim.requestId,
    call: claim.call,
    ...(claim.permits ? { permits: claim.permits.count } : {}),
    ...(claim.work ? { work: claim.work } : {}),
  };
  if (!existing) {
    if (claim.queue?.wake) return joinQueue(null, key, [], claim, now, timing);
    return { kind: 'write', op: { kind: 'create', docId: key.docId, body: lockDocument(key, [fresh], now, false) }, reused: false };
  }

  const holders = settleFences(existing);
  const ours = holders.find((holder) => holder.lease === claim.leaseId);
  const drained = ours || !claim.queue || claim.queue.wake ? undefined : drainNoteOf(existing, claim.queue.ticket);
  if (drained) return { kind: 'drained', note: drained };
  if (ours) {
    // An earlier round of this attempt landed (its answer was lost, or a later key needed more rounds).
    // Each attempt has a lease of its own, and the caller confirms with the primary a plain read that
    // shows it, so this is never a stale copy of a write that was rolled back or taken over since.
    // If that write left less than half a TTL, insert it again with a full one: a grant must never
    // return with a key whose lease is about to end. Again, not extended: if it ran out meanwhile, a
    // lock that does not write this document (one below a tree path) may have come and gone with a
    // larger fencing token, so ours must come from this write.
    if (ours.expiresAt - now >= (claim.expiresAt - now) / 2) return { kind: 'already-held', lock: existing };
    const extended = holders.map((holder) => (holder === ours ? { ...holder, expiresAt: claim.expiresAt, grantedAt: now, fence: null } : holder));
    return { kind: 'write', op: replaceOp(existing, key, extended, now, timing), reused: false };
  }

  const live = holders.filter((holder) => isLive(holder, now, skewMs));
  const served = handOver(live, existing.body.queue, now, timing, existing.body.permitLimit);
  const mismatch = permitMismatch(claim.permits, existing.body.permitLimit, live.length > 0 || served.queue.length > 0);
  if (mismatch) return { kind: 'permits-mismatch', key: key.key, ...mismatch };
  const ofThisCall = ticketOfCall(served.queue, claim);
  if (ofThisCall) {
    if (claim.queue?.wake) return joinQueue(existing, key, live, claim, now, timing);
    if (claimable(ofThisCall, now)) return claimReservation(existing, key, live, ofThisCall, fresh, now, timing);
    if (ofThisCall.ticket === claim.leaseId) return { kind: 'queued', ticket: ofThisCall, ahead: aheadIn(served.queue, ofThisCall) };
  }

  const sameRequest = claim.requestId === null ? [] : live.filter((holder) => holder.request === claim.requestId);
  // The call's own claim holds the lock: a delivery of the `wake` call again answers as the first did
  // (queued, the same ticket), never joins behind its own holder, and never takes it over.
  const claimedByThisCall = claim.queue?.wake ? sameRequest.find((holder) => (holder.call ?? null) === claim.call) : undefined;
  if (claimedByThisCall) return { kind: 'claimed', holder: claimedByThisCall };
  // A requestId names one call. The same call again (a retry, or a duplicate delivery) takes the
  // earlier grant over; the same requestId on another call is a conflict, never a takeover.
  // Two deliveries racing over several keys must not end up each holding a part while both believe
  // they hold the set: one that already holds keys yields to a duplicate instead of taking over.
  const retried = mayTakeOverRetry ? sameRequest.find((holder) => (holder.call ?? null) === claim.call) : undefined;
  const duplicate = mayTakeOverRetry ? [] : sameRequest.filter((holder) => (holder.call ?? null) === claim.call);
  const reusedByAnother = sameRequest.filter((holder) => holder !== retried && !duplicate.includes(holder));
  const others = live.filter((holder) => holder !== retried);
  // Waiters first: whoever the expired holders leave room for, in queue order. A reservation keeps the
  // lock for its waiter as a holder would; a waiter not yet served keeps everyone behind it out.
  const reservations = served.queue.filter((ticket) => reservedFor(ticket, now, skewMs));
  const unserved = served.queue.filter((ticket) => !reservedFor(ticket, now, skewMs));
  // By mode, each on its own; a semaphore's permits by all of them together (permits.ts).
  const excluded: Array<StoredHolder | StoredTicket> = blockersOf(fresh, [...others, ...reservations], key.permitLimit);
  const blocking = others.filter((holder) => excluded.includes(holder) || reusedByAnother.includes(holder) || duplicate.includes(holder));
  const blockingReservations = reservations.filter((ticket) => excluded.includes(ticket));
  if (blocking.length > 0 || blockingReservations.length > 0 || unserved.length > 0 || claim.queue?.wake) {
    if (claim.queue && !retried && reusedByAnother.length === 0 && duplicate.length === 0) return joinQueue(existing, key, live, claim, now, timing);
    const waiters = blocking.length > 0 ? [] : [...blockingReservations, ...unserved].slice(0, 1);
    return conflictOn(
      key,
      [...blocking.map(shown), ...waiters.map(({ owner, mode, reservedUntil, expiresAt }) => ({ owner, mode, expiresAt: reservedUntil ?? expiresAt }))],
      blocking.length > 0 ? Math.max(...blocking.map((holder) => holder.expiresAt + skewMs)) : now,
      {
        ...(reusedByAnother.length > 0
          ? { reason: 'request_id_reused' as const }
          : duplicate.length > 0
            ? { reason: 'duplicate_in_progress' as const }
            : blocking.length === 0
              ? { reason: 'queued_waiters' as const }
              : {}),
        ...(key.permitLimit !== undefined ? { permits: { limit: key.permitLimit, taken: permitsTaken([...others, ...reservations]) } } : {}),
      },
    );
  }
  // The retry supersedes: the earlier lease is gone from this key, and the new holder's fencing token
  // comes from this write, so it is larger than the earlier one's and downstream can reject the earlier
  // caller. It never ends before the lease it takes over: the earlier delivery may have been told it
  // holds until then, and if this one fails without giving the key back, nobody else gets in before.
  // It carries the earlier holder, to give the key back to it if this delivery fails (removeLeaseOp).
  if (!retried) return { kind: 'write', op: replaceOp(existing, key, [...others, fresh], now, timing), reused: false };
  const successor: StoredHolder = { ...fresh, expiresAt: Math.max(fresh.expiresAt, retried.expiresAt), restores: retried };
  return { kind: 'write', op: replaceOp(existing, key, [...others, successor], now, timing), reused: true };
}

/**
 * The refusal of `key`: who stands in the way, when they may be gone (`clearsAt`), and in `why` a
 * reason other than their mode and a semaphore's permits.
 */
function conflictOn(key: AcquiredKey, holders: ConflictingKey['holders'], clearsAt: number, why: Pick<ConflictingKey, 'reason' | 'permits'> = {}): Decision {
  return { kind: 'conflict', conflict: { key: key.key, granularity: key.granularity, requestedMode: key.mode, holders, ...why }, clearsAt };
}

/** A holder as a conflict shows it. */
const shown = ({ owner, mode, expiresAt }: StoredHolder): ConflictingKey['holders'][number] => ({ owner, mode, expiresAt });

/** The live ticket of this call: our own (a waiter in the call), or one of an earlier delivery of the same call (same requestId, target, mode and owner). */
function ticketOfCall(queue: readonly StoredTicket[], claim: Claim): StoredTicket | undefined {
  return (
    queue.find((ticket) => ticket.ticket === claim.leaseId) ??
    (claim.requestId === null ? undefined : queue.find((ticket) => ticket.request === claim.requestId && ticket.call === claim.call))
  );
}

const aheadIn = (queue: readonly StoredTicket[], ticket: StoredTicket): number => queue.filter((waiter) => waiter.position < ticket.position).length;

/**
 * The claim: the reserved ticket leaves the queue and our lease becomes a holder, in one conditional
 * write on the version that shows the reservation. A channel waiter's holder keeps its ticket, to go
 * back to the queue if this call fails before its grant. The reservation kept the lock for it; a
 * holder incompatible with it is still refused (never two incompatible holders, nor more permits than
 * a semaphore's limit, whatever the queue says).
 */
function claimReservation(
  existing: StoredLock,
  key: AcquiredKey,
  live: StoredHolder[],
  reserved: StoredTicket,
  fresh: StoredHolder,
  now: number,
  timing: Timing,
): Decision {
  const holder = holderFrom(reserved, fresh);
  const blocking = blockersOf(holder, live, key.permitLimit);
  if (blocking.length > 0) {
    return conflictOn(key, blocking.map(shown), Math.max(...blocking.map((holder) => holder.expiresAt + timing.maxClockSkewMs)));
  }
  // From the document's queue as stored: the write's own hand-over then drops (and reports) what ran out.
  const rest = (existing.body.queue ?? []).filter((ticket) => ticket.ticket !== reserved.ticket);
  const op = replaceOp(existing, key, [...live, holder], now, timing, existing.body.lockedBelow === true, {
    queue: rest,
    nextPosition: existing.body.nextPosition ?? 0,
  });
  return { kind: 'write', op, reused: false };
}

/**
 * Our ticket goes to the end of the queue, in the same write as whatever the queue's hand-over did
 * (which reserves it at once if the lock is free for it). A ticket of an earlier delivery of the same
 * call (same requestId, target, mode and owner) is taken over in its place instead, its reservation
 * with it: a retry keeps its turn, and the earlier delivery finds its ticket gone.
 */
function joinQueue(existing: StoredLock | null, key: AcquiredKey, live: StoredHolder[], claim: Claim, now: number, timing: Timing): Decision {
  const wanted = claim.queue!;
  const served = handOver(live, existing?.body.queue, now, timing, key.permitLimit);
  const earlier = ticketOfCall(served.queue, claim);
  if (!earlier && queueFull(served.queue, timing)) return { kind: 'queue-full', key: key.key, limit: timing.queue.maxTickets, queued: served.queue.length };
  const position = earlier?.position ?? Math.max(existing?.body.nextPosition ?? 0, ...served.queue.map((waiter) => waiter.position + 1));
  // Unreserved here: the write's hand-over reserves it again, in the same place, and so wakes this delivery's channel.
  const ticket: StoredTicket = { ...wanted, position, queuedAt: earlier?.queuedAt ?? now };
  // From the document's queue as stored: the write's own hand-over then drops (and reports) what ran out.
  const stored = existing?.body.queue ?? [];
  const queue = earlier ? stored.map((waiter) => (waiter.ticket === earlier.ticket ? ticket : waiter)) : [...stored, ticket];
  const nextPosition = Math.max(existing?.body.nextPosition ?? 0, position + 1);
  const op = existing
    ? replaceOp(existing, key, live, now, timing, existing.body.lockedBelow === true, { queue, nextPosition })
    : createOp(key, queue, nextPosition, now, timing);
  const written = op.kind === 'delete' ? undefined : op.body.queue?.find((waiter) => waiter.ticket === ticket.ticket);
  return { kind: 'queued', op, ticket: written ?? ticket, ahead: aheadIn(served.queue, ticket) };
}

/**
 * The bound on one lock's queue, decided on the document as read, so in the same conditional write
 * as the join itself: a racer that joined first makes this write fail and be decided again. Only a
 * new ticket counts against it (a ticket of this call already queued is replaced in its place), and
 * only live ones, since the write drops the ones that ran out. Waiters in the call and channel
 * waiters are counted alike: both take a ticket on the document.
 */
const queueFull = (live: readonly StoredTicket[], timing: Timing): boolean => live.length + 1 > timing.queue.maxTickets;

/** A new document holding only a queue (a channel waiter first at a free lock): reserved for it at once. */
function createOp(key: AcquiredKey, queue: StoredTicket[], nextPosition: number, now: number, timing: Timing): WriteOp {
  const served = handOver([], queue, now, timing, key.permitLimit);
  return withEffects({ kind: 'create', docId: key.docId, body: lockDocument(key, [], now, false, { queue: served.queue, nextPosition }) }, served);
}

/**
 * The conditional write that leaves `holders` on the document; a document marked `lockedBelow`, with
 * waiters, or with a drain's note still needed, is kept, even empty. The write serves the queue
 * (queue.ts: `queue` when given, else the document's): whoever frees a lock reserves it for the next
 * waiters in the same write. The op carries what it did to the queue (`queueEffects`), for the waiters
 * to be woken or told once it has applied. Drain notes go once everyone sees their `keepUntil` passed.
 */
export function replaceOp(
  existing: StoredLock,
  key: DocumentKey,
  holders: StoredHolder[],
  now: number,
  timing: Timing,
  lockedBelow = existing.body.lockedBelow === true,
  queued: QueueState = noQueue(existing.body),
  drained: readonly DrainNote[] = existing.body.drained ?? [],
): WriteOp {
  const kept = holders.filter((holder) => isLive(holder, now, timing.maxClockSkewMs));
  const served = handOver(kept, queued.queue, now, timing, key.permitLimit);
  const notes = drained.filter((note) => noteNeeded(note, now, timing.maxClockSkewMs));
  if (kept.length === 0 && !lockedBelow && served.queue.length === 0 && notes.length === 0) {
    return withEffects({ kind: 'delete', docId: existing.docId, ifSeqNo: existing.seqNo, ifPrimaryTerm: existing.primaryTerm, index: existing.index }, served);
  }
  return withEffects(
    {
      kind: 'replace',
      docId: existing.docId,
      body: lockDocument(key, kept, now, lockedBelow, { queue: served.queue, nextPosition: queued.nextPosition }, notes),
      ifSeqNo: existing.seqNo,
      ifPrimaryTerm: existing.primaryTerm,
      index: existing.index,
    },
    served,
  );
}

/** A drain's note stays until everyone sees its `keepUntil` passed (its waiters in the call stop looking by then, by their own clocks). */
const noteNeeded = (note: DrainNote, now: number, skewMs: number): boolean => now < note.keepUntil + skewMs;

/** Whether a write would remove a drain's note nobody needs any more (the sweeper's cue). */
export const drainNotesLapsed = (existing: StoredLock, now: number, timing: Timing): boolean =>
  (existing.body.drained ?? []).some((note) => !noteNeeded(note, now, timing.maxClockSkewMs));

/** The drain that took `ticketId` out of this document's queue, while its waiter may still be looking; undefined when none did (or it is queued). */
export function drainNoteOf(existing: StoredLock | null | undefined, ticketId: string): DrainNote | undefined {
  if (!existing || existing.body.queue?.some((ticket) => ticket.ticket === ticketId)) return undefined;
  return existing.body.drained?.find((note) => note.tickets.includes(ticketId));
}

/** Notes on the op what its write does to the queue, when it reserves the lock for waiters or drops them. */
function withEffects(op: WriteOp, served: Pick<HandOver, 'reserved' | 'dropped'>): WriteOp {
  if (served.reserved.length === 0 && served.dropped.length === 0) return op;
  return { ...op, queueEffects: { reserved: served.reserved, dropped: served.dropped } };
}

/**
 * How a removal gives back: nothing (a release), what a failed acquire took (`rollback`), or that and
 * the claimed ticket of a waiter in the call that goes on waiting (`requeue`).
 */
export type GiveBack = false | 'rollback' | 'requeue';

/**
 * The write that removes one lease (and any expired holders) from a document; undefined when there is
 * nothing to do.
 * - `giveBack` (a failed acquire): if our holder took over an earlier delivery of its call, that
 *   holder is put back in the same write, so the key is never free while the earlier delivery holds it.
 *   A holder that claimed a reservation puts its ticket back in the queue, in its place, unreserved
 *   until `retryBlockedMs` has passed, whenever its waiter waits on: a channel waiter always (it is
 *   woken again to claim), a waiter in the call when its call goes on waiting (`requeue`). Nobody
 *   behind the ticket is served meanwhile: a failed claim keeps its place.
 * - Our lease already gone, taken over by a later delivery of the call: that delivery must no longer
 *   give the key back to us, since we are giving it up (the write clears its note of us).
 * - `clearMark` (a release): an exclusive holder alone on a `lockedBelow` document, inserted by the
 *   very version this write replaces, also clears the mark (the document goes). Nothing was written
 *   there since our insertion, so every lock below that read the document meanwhile saw us live and
 *   backed off: one that found us run out writes the document first (scope.ts, checkAbove), and then
 *   this conditional write fails. The locks below from before our insertion were searched for and
 *   waited out before our grant. So no lock below lives that has not written the mark itself.
 */
export function removeLeaseOp(
  existing: StoredLock,
  leaseId: string,
  now: number,
  timing: Timing,
  giveBack: GiveBack = false,
  clearMark = false,
): WriteOp | undefined {
  const skewMs = timing.maxClockSkewMs;
  const settled = settleFences(existing);
  const ours = settled.find((holder) => holder.lease === leaseId);
  // Our lease leaves every note too, however deep: a holder given back later carries the notes it
  // had, and one naming a delivery that gave up would hand the key to nobody.
  const others = settled.filter((holder) => holder !== ours).map((holder) => withoutNote(holder, leaseId));
  if (!ours) {
    if (others.every((holder, index) => holder === settled[index])) return undefined;
    return replaceOp(existing, { ...existing.body, docId: existing.docId }, others, now, timing);
  }
  const remaining = others.filter((holder) => isLive(holder, now, skewMs));
  const earlier = giveBack ? notesWithout(ours.restores, leaseId) : null;
  if (earlier && isLive(earlier, now, skewMs) && !remaining.some((holder) => holder.lease === earlier.lease)) remaining.push(earlier);
  // Our fence is still pending only in the version that inserted us: nothing has written the document since.
  const insertedByThisVersion = existing.body.holders.some((holder) => holder.lease === leaseId && holder.fence === null);
  const unmark = clearMark && existing.body.lockedBelow === true && ours.mode === 'X' && remaining.length === 0 && insertedByThisVersion;
  const lockedBelow = existing.body.lockedBelow === true && !unmark;
  const waitsOn = giveBack === 'requeue' || (giveBack === 'rollback' && ours.ticket?.wake !== undefined);
  const back = waitsOn && ours.ticket && ticketLive(ours.ticket, now, skewMs) ? { ...ours.ticket, retryAt: now + timing.queue.retryBlockedMs } : undefined;
  if (!back) return replaceOp(existing, { ...existing.body, docId: existing.docId }, remaining, now, timing, lockedBelow);
  const queue = [...(existing.body.queue ?? []).filter((ticket) => ticket.ticket !== back.ticket), back];
  return replaceOp(existing, { ...existing.body, docId: existing.docId }, remaining, now, timing, lockedBelow, {
    queue,
    nextPosition: existing.body.nextPosition ?? 0,
  });
}

/**
 * An operator's revoke of the lock on this key: every holder of the key itself (S or X, live or run
 * out) leaves, and no note gives it back; the intentions of locks below stay. The same conditional
 * write serves the queue. Undefined when nobody holds the key itself.
 */
export function revokeOp(existing: StoredLock, now: number, timing: Timing): { op: WriteOp; revoked: StoredHolder[] } | undefined {
  const settled = settleFences(existing);
  const revoked = settled.filter((holder) => holder.mode === 'S' || holder.mode === 'X');
  if (revoked.length === 0) return undefined;
  const remaining = settled
    .filter((holder) => !revoked.includes(holder))
    .map((holder) => revoked.reduce((kept, gone) => withoutNote(kept, gone.lease), holder));
  return { op: replaceOp(existing, { ...existing.body, docId: existing.docId }, remaining, now, timing), revoked };
}

/**
 * An operator's drain: every ticket leaves the queue, in one conditional write that changes nothing
 * else but the note its waiters in the call learn it from (they have no channel to be told on): it
 * names their tickets and is kept until the last of them has stopped looking, its ticket's end plus
 * the clock skew allowance (the waiter's deadline). Undefined when nobody waits.
 */
export function drainOp(
  existing: StoredLock,
  now: number,
  timing: Timing,
  why: Pick<DrainNote, 'by' | 'reason'>,
): { op: WriteOp; dropped: StoredTicket[] } | undefined {
  const dropped = existing.body.queue ?? [];
  if (dropped.length === 0) return undefined;
  const inCall = dropped.filter((ticket) => ticket.wake === undefined);
  const note: DrainNote[] =
    inCall.length === 0
      ? []
      : [
          {
            tickets: inCall.map((ticket) => ticket.ticket),
            by: why.by,
            reason: why.reason,
            at: now,
            keepUntil: Math.max(...inCall.map((ticket) => ticket.expiresAt)) + timing.maxClockSkewMs,
          },
        ];
  const emptied = replaceOp(
    existing,
    { ...existing.body, docId: existing.docId },
    settleFences(existing),
    now,
    timing,
    existing.body.lockedBelow === true,
    { queue: [], nextPosition: existing.body.nextPosition ?? 0 },
    [...(existing.body.drained ?? []), ...note],
  );
  return { op: withEffects(emptied, { reserved: [], dropped }), dropped };
}

/** The note of `leaseId` somewhere in the chain of holders that `note` would give the key back to. */
export function noteOf(note: StoredHolder | null | undefined, leaseId: string): StoredHolder | undefined {
  for (let current = note; current; current = current.restores) if (current.lease === leaseId) return current;
  return undefined;
}

/** The chain of notes without `leaseId` (the one after it moves up); the same object when it is not there. */
function notesWithout(note: StoredHolder | null | undefined, leaseId: string): StoredHolder | null {
  if (!note) return null;
  const deeper = notesWithout(note.restores, leaseId);
  if (note.lease === leaseId) return deeper;
  return deeper === (note.restores ?? null) ? note : { ...note, restores: deeper };
}

/** The holder without `leaseId` anywhere in its notes; the same object when it is not there. */
export const withoutNote = (holder: StoredHolder, leaseId: string): StoredHolder => {
  if (!holder.restores) return holder;
  const restores = notesWithout(holder.restores, leaseId);
  return restores === holder.restores ? holder : { ...holder, restores };
};

export function holderViews(lock: StoredLock, now: number, skewMs: number): HolderView[] {
  return lock.body.holders.map((holder) => ({
    owner: holder.owner,
    mode: holder.mode,
    expiresAt: holder.expiresAt,
    fencingToken: fenceOf(holder, lock),
    expired: !isLive(holder, now, skewMs),
    ...(holder.permits !== undefined ? { permits: holder.permits } : {}),
  }));
}

/** The document as a write that applied left it (the outcome's position, the body it wrote). */
export function writtenLock(outcome: Extract<WriteOutcome, { ok: true }>, body: LockDocument): StoredLock {
  const { docId, seqNo, primaryTerm, index, epoch } = outcome;
  return { docId, seqNo, primaryTerm, index, ...(epoch !== undefined ? { epoch } : {}), body };
}
