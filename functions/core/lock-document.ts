/** Pure decisions over one lock document: who holds it, whether a request fits, what to write. */
import { compatible } from './compatibility.js';
import { encodable, type FencingToken, LARGEST_TOKEN, tokenAt, type WritePosition } from './fencing.js';
import type { ConflictingKey, HolderView, LockDocument, PlannedKey, StoredHolder, StoredTicket } from './model.js';
import { handOver, queueAttentionAt, ticketLive } from './queue.js';
import type { StoredLock, WriteOp, WriteOutcome } from './store.js';

export interface Claim {
  leaseId: string;
  proof: string;
  owner: string;
  requestId: string | null;
  /** Hash of the call's target, mode and owner (null without a requestId). */
  call: string | null;
  expiresAt: number;
  /** Join the queue when the lock cannot be granted now (or others wait for it): the ticket to write. */
  queue?: Omit<StoredTicket, 'position' | 'queuedAt'>;
}

/** Seen by anyone but the holder, a lease ends only once the clock skew allowance has also passed. */
export const isLive = (holder: StoredHolder, now: number, skewMs: number): boolean => now < holder.expiresAt + skewMs;

/** The pending holder (fence null) was inserted by the write that produced (term, seq): fix its token before changing the document. */
export function settleFences(lock: StoredLock): StoredHolder[] {
  return lock.body.holders.map((holder) => (holder.fence === null ? { ...holder, fence: fenceOf(holder, lock) } : holder));
}

/** A write past the encodable range is never granted (the engine rolls it back), but a holder it left behind gets the largest token. */
export function fenceOf(holder: StoredHolder, written: WritePosition): FencingToken {
  if (holder.fence !== null) return holder.fence;
  return encodable(written) ? tokenAt(written) : LARGEST_TOKEN;
}

type DocumentKey = Pick<PlannedKey, 'docId' | 'namespace' | 'granularity' | 'key'>;

/** The document's queue as a write leaves it: its waiters, and the counter their positions come from. */
export interface QueueState {
  queue: StoredTicket[];
  nextPosition: number;
}

const noQueue = (body: LockDocument | undefined): QueueState => ({ queue: body?.queue ?? [], nextPosition: body?.nextPosition ?? 0 });

/**
 * `lockedBelow` is explicit: a rewrite that dropped it would let a tree lock skip the locks below it.
 * `minExpiresAt` is when the sweeper must look at the document: a lease or a ticket running out, a
 * waiter to try again, a grant still to be told to its waiter.
 */
export function lockDocument(
  key: DocumentKey,
  holders: StoredHolder[],
  now: number,
  lockedBelow: boolean,
  queued: QueueState = noQueue(undefined),
): LockDocument {
  const expiries = holders.map((holder) => holder.expiresAt);
  const attention = [...expiries, ...holders.filter((holder) => holder.delivery !== undefined).map((holder) => holder.grantedAt)];
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
  };
}

export type Decision =
  | { kind: 'conflict'; conflict: ConflictingKey; clearsAt: number }
  /** Our lease is already there (an earlier round of this attempt landed): nothing to write. */
  | { kind: 'already-held'; lock: StoredLock }
  | { kind: 'write'; op: WriteOp; reused: boolean }
  /** Our ticket waits in the queue: `op` puts it there (none when an earlier round did), `ahead` waiters before it. */
  | { kind: 'queued'; op?: WriteOp; ticket: StoredTicket; ahead: number };

/**
 * Whether `claim` may take `key` given the document as read (null: absent), and the write that takes
 * it. Expired holders are dropped on the way: that is the immediate takeover, and the waiters queued
 * for the lock are served first (queue.ts): a caller never overtakes a live ticket. A claim with a
 * ticket joins the queue when it cannot be granted; one without is refused.
 */
export function decideAcquire(existing: StoredLock | null, key: PlannedKey, claim: Claim, now: number, skewMs: number, mayTakeOverRetry = true): Decision {
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
  };
  if (!existing) return { kind: 'write', op: { kind: 'create', docId: key.docId, body: lockDocument(key, [fresh], now, false) }, reused: false };

  const holders = settleFences(existing);
  const ours = holders.find((holder) => holder.lease === claim.leaseId);
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
    return { kind: 'write', op: replaceOp(existing, key, extended, now, skewMs), reused: false };
  }
  const queued = existing.body.queue?.find((ticket) => ticket.ticket === claim.leaseId);
  if (queued && ticketLive(queued, now, skewMs)) {
    return { kind: 'queued', ticket: queued, ahead: (existing.body.queue ?? []).filter((ticket) => ticket.position < queued.position).length };
  }

  const live = holders.filter((holder) => isLive(holder, now, skewMs));
  const sameRequest = claim.requestId === null ? [] : live.filter((holder) => holder.request === claim.requestId);
  // A requestId names one call. The same call again (a retry, or a duplicate delivery) takes the
  // earlier grant over; the same requestId on another call is a conflict, never a takeover.
  // Two deliveries racing over several keys must not end up each holding a part while both believe
  // they hold the set: one that already holds keys yields to a duplicate instead of taking over.
  const retried = mayTakeOverRetry ? sameRequest.find((holder) => (holder.call ?? null) === claim.call) : undefined;
  const duplicate = mayTakeOverRetry ? [] : sameRequest.filter((holder) => (holder.call ?? null) === claim.call);
  const reusedByAnother = sameRequest.filter((holder) => holder !== retried && !duplicate.includes(holder));
  const others = live.filter((holder) => holder !== retried);
  // Waiters first: whoever the expired holders leave room for, in queue order.
  const served = handOver(others, existing.body.queue, now, skewMs);
  const blocking = served.holders.filter((holder) => !compatible(key.mode, holder.mode) || reusedByAnother.includes(holder) || duplicate.includes(holder));
  if (blocking.length > 0 || served.queue.length > 0) {
    if (claim.queue && !retried && reusedByAnother.length === 0 && duplicate.length === 0) return joinQueue(existing, key, served, claim, now, skewMs);
    const waiters = blocking.length > 0 ? [] : served.queue.slice(0, 1);
    return {
      kind: 'conflict',
      conflict: {
        key: key.key,
        granularity: key.granularity,
        requestedMode: key.mode,
        holders: [...blocking, ...waiters].map(({ owner, mode, expiresAt }) => ({ owner, mode, expiresAt })),
        ...(reusedByAnother.length > 0
          ? { reason: 'request_id_reused' as const }
          : duplicate.length > 0
            ? { reason: 'duplicate_in_progress' as const }
            : blocking.length === 0
              ? { reason: 'queued_waiters' as const }
              : {}),
      },
      clearsAt: blocking.length > 0 ? Math.max(...blocking.map((holder) => holder.expiresAt + skewMs)) : now,
    };
  }
  // The retry supersedes: the earlier lease is gone from this key, and the new holder's fencing token
  // comes from this write, so it is larger than the earlier one's and downstream can reject the earlier
  // caller. It never ends before the lease it takes over: the earlier delivery may have been told it
  // holds until then, and if this one fails without giving the key back, nobody else gets in before.
  // It carries the earlier holder, to give the key back to it if this delivery fails (removeLeaseOp).
  const decided: QueueWrite = { ...served, nextPosition: existing.body.nextPosition ?? 0 };
  const lockedBelow = existing.body.lockedBelow === true;
  if (!retried) return { kind: 'write', op: replaceOp(existing, key, [...served.holders, fresh], now, skewMs, lockedBelow, decided), reused: false };
  const successor: StoredHolder = { ...fresh, expiresAt: Math.max(fresh.expiresAt, retried.expiresAt), restores: retried };
  return { kind: 'write', op: replaceOp(existing, key, [...served.holders, successor], now, skewMs, lockedBelow, decided), reused: true };
}

/**
 * Our ticket goes to the end of the queue, in the same write as whatever the queue's hand-over did.
 * A ticket of an earlier delivery of the same call (same requestId, target, mode and owner) is taken
 * over in its place instead: a retry keeps its turn, and the earlier delivery finds its ticket gone.
 */
function joinQueue(existing: StoredLock, key: DocumentKey, served: ReturnType<typeof handOver>, claim: Claim, now: number, skewMs: number): Decision {
  const wanted = claim.queue!;
  const earlier = claim.requestId === null ? undefined : served.queue.find((ticket) => ticket.request === claim.requestId && ticket.call === claim.call);
  const position = earlier?.position ?? Math.max(existing.body.nextPosition ?? 0, ...served.queue.map((waiter) => waiter.position + 1));
  const ticket: StoredTicket = { ...wanted, position, queuedAt: earlier?.queuedAt ?? now };
  const queue = earlier ? served.queue.map((waiter) => (waiter === earlier ? ticket : waiter)) : [...served.queue, ticket];
  const nextPosition = Math.max(existing.body.nextPosition ?? 0, position + 1);
  const op = replaceOp(existing, key, served.holders, now, skewMs, existing.body.lockedBelow === true, { ...served, queue, nextPosition });
  return { kind: 'queued', op, ticket, ahead: queue.filter((waiter) => waiter.position < position).length };
}

/** What a write does to the queue, when the caller has decided it (decideAcquire); replaceOp serves the queue itself otherwise. */
export interface QueueWrite extends QueueState {
  granted: StoredHolder[];
  dropped: StoredTicket[];
}

/**
 * The conditional write that leaves `holders` on the document; a document marked `lockedBelow`, or
 * with waiters, is kept, even empty. Unless `decided` says what becomes of the queue, the write serves
 * it (queue.ts): whoever frees a lock hands it over in the same write. The op carries what it did to
 * the queue (`queueEffects`), for the waiters to be told once it has applied.
 */
export function replaceOp(
  existing: StoredLock,
  key: DocumentKey,
  holders: StoredHolder[],
  now: number,
  skewMs: number,
  lockedBelow = existing.body.lockedBelow === true,
  decided?: QueueWrite,
): WriteOp {
  let queued: QueueWrite | undefined = decided;
  if (!queued && existing.body.queue && existing.body.queue.length > 0) {
    const served = handOver(
      holders.filter((holder) => isLive(holder, now, skewMs)),
      existing.body.queue,
      now,
      skewMs,
    );
    queued = { ...served, nextPosition: existing.body.nextPosition ?? 0 };
  }
  const kept = queued ? (decided ? holders : [...holders.filter((holder) => isLive(holder, now, skewMs)), ...queued.granted]) : holders;
  // Whatever write prunes a grant whose waiter was never told, run out, owes that waiter the news (not only the sweeper's).
  const lost = existing.body.holders.filter(
    (holder) => holder.delivery !== undefined && !isLive(holder, now, skewMs) && !kept.some((other) => other.lease === holder.lease),
  );
  if (kept.length === 0 && !lockedBelow && (queued?.queue.length ?? 0) === 0) {
    return withEffects(
      { kind: 'delete', docId: existing.docId, ifSeqNo: existing.seqNo, ifPrimaryTerm: existing.primaryTerm, index: existing.index },
      queued,
      lost,
    );
  }
  return withEffects(
    {
      kind: 'replace',
      docId: existing.docId,
      body: lockDocument(key, kept, now, lockedBelow, queued ?? noQueue(existing.body)),
      ifSeqNo: existing.seqNo,
      ifPrimaryTerm: existing.primaryTerm,
      index: existing.index,
    },
    queued,
    lost,
  );
}

/** Notes on the op what its write does to the queue, when it grants or drops a waiter, or prunes a grant never told. */
function withEffects(op: WriteOp, queued: QueueWrite | undefined, lost: StoredHolder[]): WriteOp {
  const granted = queued?.granted ?? [];
  const dropped = queued?.dropped ?? [];
  if (granted.length === 0 && dropped.length === 0 && lost.length === 0) return op;
  return { ...op, queueEffects: { granted, dropped, ...(lost.length > 0 ? { lost } : {}) } };
}

/**
 * The write that removes one lease (and any expired holders) from a document; undefined when there is
 * nothing to do.
 * - `giveBack` (a failed acquire): if our holder took over an earlier delivery of its call, that
 *   holder is put back in the same write, so the key is never free while the earlier delivery holds it.
 * - Our lease already gone, taken over by a later delivery of the call: that delivery must no longer
 *   give the key back to us, since we are giving it up (the write clears its note of us).
 * - `clearMark` (a release): an exclusive holder alone on a `lockedBelow` document, inserted by the
 *   very version this write replaces, also clears the mark (the document goes). Nothing was written
 *   there since our insertion, so every lock below that read the document meanwhile saw us live and
 *   backed off: one that found us run out writes the document first (scope.ts, checkAbove), and then
 *   this conditional write fails. The locks below from before our insertion were searched for and
 *   waited out before our grant. So no lock below lives that has not written the mark itself.
 */
export function removeLeaseOp(existing: StoredLock, leaseId: string, now: number, skewMs: number, giveBack = false, clearMark = false): WriteOp | undefined {
  const settled = settleFences(existing);
  const ours = settled.find((holder) => holder.lease === leaseId);
  // Our lease leaves every note too, however deep: a holder given back later carries the notes it
  // had, and one naming a delivery that gave up would hand the key to nobody.
  const others = settled.filter((holder) => holder !== ours).map((holder) => withoutNote(holder, leaseId));
  if (!ours) {
    if (others.every((holder, index) => holder === settled[index])) return undefined;
    return replaceOp(existing, { ...existing.body, docId: existing.docId }, others, now, skewMs);
  }
  const remaining = others.filter((holder) => isLive(holder, now, skewMs));
  const earlier = giveBack ? notesWithout(ours.restores, leaseId) : null;
  if (earlier && isLive(earlier, now, skewMs) && !remaining.some((holder) => holder.lease === earlier.lease)) remaining.push(earlier);
  // Our fence is still pending only in the version that inserted us: nothing has written the document since.
  const insertedByThisVersion = existing.body.holders.some((holder) => holder.lease === leaseId && holder.fence === null);
  const unmark = clearMark && existing.body.lockedBelow === true && ours.mode === 'X' && remaining.length === 0 && insertedByThisVersion;
  return replaceOp(existing, { ...existing.body, docId: existing.docId }, remaining, now, skewMs, existing.body.lockedBelow === true && !unmark);
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
  }));
}

/** The document as a write that applied left it (the outcome's position, the body it wrote). */
export function writtenLock(outcome: Extract<WriteOutcome, { ok: true }>, body: LockDocument): StoredLock {
  const { docId, seqNo, primaryTerm, index, epoch } = outcome;
  return { docId, seqNo, primaryTerm, index, ...(epoch !== undefined ? { epoch } : {}), body };
}
