/**
 * One attempt of an acquire, as docs/protocol.md writes it: `take` the keys with conditional writes
 * (grant T1, join T2/T3, claim T4, takeover of a retry T5), `claimWhenReserved` for a waiter in the
 * call, `confirm` what is above and below the target and that the keys are still ours, then `grant`;
 * on any failure, `abandon` gives back whatever the attempt took. The attempt's state lives here, one
 * field per thing it knows, and the write loop calls it as its plan (write-loop.ts).
 */
import { hash } from 'node:crypto';
import { allExclusive } from '../compatibility.js';
import {
  FencingRangeError,
  LockContentionError,
  LockHeldError,
  LockOutcomeUnknownError,
  PermitLimitMismatchError,
  QueueFullError,
  StoreUnavailableError,
} from '../errors.js';
import { encodable, maxFencingToken } from '../fencing.js';
import { aboveTarget, describeTarget, rulesFor } from '../granularity/index.js';
import { lockDocId } from '../keys.js';
import { encodeToken, hintFor, type NewLease } from '../lease-token.js';
import { type Claim, type Decision, decideAcquire, fenceOf, lostKey, noteOf, writtenLock } from '../lock-document.js';
import type { AcquireRequest, ConflictingKey, Grant, PlannedKey, Queued, StoredHolder, StoredTicket } from '../model.js';
import { ticketOf } from '../queue.js';
import type { StoredLock, WriteOp } from '../store.js';
import { type Applied, type WritePlan, writeUntilSettled } from '../write-loop.js';
import type { EngineContext } from './context.js';
import { CountingStore } from './counting-store.js';
import { drainedError } from './drain.js';
import { claimedOutcome, giveTicketBack, leaveQueue, queuedOutcome, waitForReservation } from './queue-wait.js';
import { rollback } from './remove-lease.js';

/** How an attempt may wait: until `deadline`; with `queueUntil`, in the lock's queue (its ticket's own end). */
export interface Waiting {
  deadline: number;
  queueUntil?: number;
}

interface HeldKey {
  key: PlannedKey;
  lock: StoredLock;
  /** Taken over from an earlier delivery of the same call. */
  reused: boolean;
}

export class AcquireAttempt implements WritePlan<PlannedKey> {
  private readonly counted: CountingStore;
  private readonly context: EngineContext;
  /** Names the call with its requestId: target, mode and owner (null without a requestId). */
  private readonly call: string | null;
  /** Documents read from the primary in the same request as our writes (tree: the ancestors). */
  readonly alsoRead?: readonly string[];
  /** The keys our lease holds, as our writes (or the primary) last showed them. */
  private readonly held = new Map<string, HeldKey>();
  /** Keys where this attempt took over an earlier delivery of its call. */
  private readonly reusedIn = new Set<string>();
  /**
   * Where the primary showed our lease only in a note: a later delivery of the call took over what a
   * write of ours (its answer lost) inserted. If we fail, our rollback clears the note, or that
   * delivery, failing too, would give the key back to this attempt's lease, which nobody holds.
   */
  private readonly notedIn = new Map<string, StoredLock>();
  /** The documents as last read, to decide the next writes on. */
  private known = new Map<string, StoredLock | null>();
  /** What was read along with our last write (valid while it came after that write). */
  private guardsRead: Map<string, StoredLock | null> | undefined;
  /** Our ticket, and the document it waits in as our last look left it. */
  private queuedTicket: StoredTicket | undefined;
  private queuedIn: StoredLock | undefined;
  /** A ticket of ours went in at some point: on failure, it leaves. */
  private joined = false;
  /** A waiter in the call whose claim (of its own ticket) landed: if what is above or below refuses it, the ticket goes back. */
  private claimedOwnTicket = false;
  /** A `wake` call delivered again after the call's own claim: the holder that claim made. */
  private claimedByThisCall: StoredHolder | undefined;
  /** The latest expiry any of our writes asked for: until when a failed attempt may still hold a key. */
  private latestExpiry = 0;
  /** A lost answer could not be resolved: what this attempt holds is unknown. */
  private unresolved = false;

  constructor(
    outer: EngineContext,
    private readonly request: AcquireRequest,
    private readonly keys: PlannedKey[],
    private readonly lease: NewLease,
    private readonly waiting: Waiting,
  ) {
    this.counted = new CountingStore(outer.store);
    this.context = { ...outer, store: this.counted };
    this.call = request.requestId === undefined ? null : callFingerprint(request);
    const { target } = request;
    const guards = aboveTarget(target).map(({ granularity, key }) => lockDocId(target.namespace, granularity, key));
    if (guards.length > 0) this.alsoRead = guards;
  }

  async run(): Promise<Grant | Queued> {
    try {
      await this.take();
      for (;;) {
        const queued = await this.claimWhenReserved();
        if (queued) return queued;
        if (await this.confirmOrRequeue()) return this.grant();
      }
    } catch (error) {
      throw await this.abandon(error as Error);
    }
  }

  /** The conditional writes that take the keys (or queue for one), until each is settled. */
  private async take(): Promise<void> {
    if (this.known.size === 0 && !allExclusive(this.keys)) this.known = await this.counted.read(this.keys.map((key) => key.docId));
    await writeUntilSettled(this.context, this.context.settings.contentionBudgetMs, this.keys, this);
  }

  /**
   * Queued: a channel waiter hears so now (and is woken to claim later); a waiter in the call looks
   * until the lock is reserved for it, then claims it with a conditional write on the version it saw.
   */
  private async claimWhenReserved(): Promise<Queued | undefined> {
    if (this.claimedByThisCall) return claimedOutcome(this.request, this.claimedByThisCall);
    const [only] = this.keys;
    while (this.queuedTicket && only && !this.held.has(only.docId)) {
      if (this.request.wake) return queuedOutcome(this.request, this.queuedTicket, this.queuedIn);
      this.known = new Map([[only.docId, await waitForReservation(this.context, only, this.lease.leaseId, this.waiting.deadline, this.queuedIn)]]);
      this.queuedTicket = undefined;
      await this.take();
      this.claimedOwnTicket = this.held.has(only.docId);
    }
    return undefined;
  }

  /**
   * `confirm`; true when it passed. A waiter in the call whose claim landed and was then refused by
   * what is above or below the target keeps its place, as a channel waiter does: its ticket goes back
   * where it was (with `retryAt`, so nobody behind it is served meanwhile) and it waits on (false).
   */
  private async confirmOrRequeue(): Promise<boolean> {
    try {
      await this.confirm();
      return true;
    } catch (error) {
      const [only] = this.keys;
      const refused = error instanceof LockHeldError || error instanceof LockContentionError;
      const entry = only && this.held.get(only.docId);
      if (!refused || !this.claimedOwnTicket || !entry || this.context.settings.now() >= this.waiting.deadline) throw error;
      const back = await giveTicketBack(this.context, entry.lock, this.lease.leaseId);
      const ticket = back && ticketOf(back.body.queue, this.lease.leaseId);
      if (!back || !ticket) throw error;
      this.held.delete(only.docId);
      this.claimedOwnTicket = false;
      this.guardsRead = undefined;
      this.known = new Map([[only.docId, back]]);
      this.queuedTicket = ticket;
      this.queuedIn = back;
      return false;
    }
  }

  /**
   * What the granularity checks beyond the documents written (tree: ancestors, locks below; it may
   * write them again). Then, if the attempt made more than one request, the primary's word that every
   * key still holds our lease: another delivery of this call may have taken one over in between.
   */
  private async confirm(): Promise<void> {
    const { confirm } = rulesFor(this.request.target.granularity);
    if (confirm) {
      const confirmed = await confirm(this.context, {
        target: this.request.target,
        mode: this.request.mode,
        ttlMs: this.request.ttlMs,
        leaseId: this.lease.leaseId,
        locks: this.keys.map((key) => this.held.get(key.docId)!.lock),
        deadline: this.waiting.deadline,
        ...(this.guardsRead ? { guardsRead: this.guardsRead } : {}),
      });
      for (const [index, lock] of confirmed.entries()) this.hold(this.keys[index]!, lock, false);
    }
    if (this.request.requestId !== undefined && this.counted.requests > 1) await this.confirmStillOurs();
  }

  /** Every key from the primary: each must still hold our lease (a duplicate that took it over and gave it back leaves it as it was). */
  private async confirmStillOurs(): Promise<void> {
    const { settings } = this.context;
    const now = settings.now();
    const found = await this.counted.readPrimary(this.keys.map((key) => key.docId));
    const lost: ConflictingKey[] = [];
    for (const key of this.keys) {
      const lock = found.get(key.docId);
      if (lock && this.ours(lock)) {
        this.held.set(key.docId, { ...this.held.get(key.docId)!, lock });
        continue;
      }
      lost.push(lostKey(key, lock, now, settings.maxClockSkewMs, 'duplicate_in_progress'));
    }
    if (lost.length > 0) throw new LockHeldError({ conflicts: lost, retryAfterMs: settings.retry.baseDelayMs });
  }

  /**
   * Never a grant for a key this attempt may have lost: every key was written (or found) with our
   * lease, and no one takes a key over before its expiry plus skew. If the attempt stalled so long that
   * the earliest is near its end, or a write landed beyond what a fencing token encodes, it is not a grant.
   */
  private grant(): Grant {
    for (const { lock } of this.held.values()) {
      const mine = lock.body.holders.find((holder) => holder.lease === this.lease.leaseId);
      if (mine?.fence === null && !encodable(lock)) {
        throw new FencingRangeError(
          { primaryTerm: lock.primaryTerm, seqNo: lock.seqNo },
          `the lock index's write position (term ${lock.primaryTerm}, seq_no ${lock.seqNo}) is beyond what a fencing token encodes; create a new lock index`,
        );
      }
    }
    const grant = this.grantBody();
    const left = grant.expiresAt - this.context.settings.now();
    if (left < this.request.ttlMs / 2) {
      throw new StoreUnavailableError(
        { operation: 'acquire' },
        `The acquire of ${describeTarget(this.request.target)} stalled (the lock store or this process): its lease would have had ${Math.max(0, left)} ms of ${this.request.ttlMs} left, so it was rolled back. Retry.`,
      );
    }
    return grant;
  }

  private grantBody(): Grant {
    const { request, lease } = this;
    const granted = this.keys.map((key) => {
      const entry = this.held.get(key.docId)!;
      const mine = entry.lock.body.holders.find((holder) => holder.lease === lease.leaseId)!;
      return { key, entry, mine, fencingToken: fenceOf(mine, entry.lock) };
    });
    const expiresAt = Math.min(...granted.map(({ mine }) => mine.expiresAt));
    const claimed = granted.length === 1 ? granted[0]!.mine.ticket : undefined;
    return {
      leaseToken: encodeToken(
        {
          leaseId: lease.leaseId,
          target: request.target,
          mode: request.mode,
          hints: granted.map(({ entry }) => hintFor(entry.lock)),
          expiresAt,
          grantedAt: Math.round(Math.min(...granted.map(({ mine }) => mine.grantedAt))),
          ...(request.work ? { work: request.work } : {}),
        },
        lease.secret,
        this.context.settings.tokenSigningKey,
      ),
      leaseId: lease.leaseId,
      fencingToken: maxFencingToken(granted.map(({ fencingToken }) => fencingToken)),
      expiresAt,
      ttlMs: request.ttlMs,
      target: request.target,
      mode: request.mode,
      owner: request.owner,
      keys: granted.map(({ key, fencingToken }) => ({ key: key.key, mode: key.mode, fencingToken })),
      reused: granted.some(({ entry }) => entry.reused),
      ...(claimed ? { waitedMs: Math.max(0, granted[0]!.mine.grantedAt - claimed.queuedAt) } : {}),
      ...(request.permits ? { permits: request.permits } : {}),
    };
  }

  /**
   * A failed attempt gives back whatever it took, and its ticket leaves the queue (best effort: one
   * left behind lapses at its end, and never became a holder). When it cannot give back (the store is
   * down) or cannot know what it took (a lost answer it could not resolve), the caller hears that it
   * may hold keys until `mayHoldUntil`, and that a retry with the same requestId recovers them.
   */
  private async abandon(error: Error): Promise<Error> {
    const { request, lease } = this;
    if (this.joined && this.keys[0]) await leaveQueue(this.context, this.keys[0], lease.leaseId).catch(() => undefined);
    // What we hold, what the primary last showed holding our lease that was not yet counted (a key
    // given back to this attempt by a failed later delivery of its call, say), and the notes of us.
    const locks = [...this.held.values()]
      .map((entry) => entry.lock)
      .concat([...this.known.values()].filter((lock): lock is StoredLock => lock !== null && this.ours(lock) && !this.held.has(lock.docId)))
      .concat([...this.notedIn.values()].filter((lock) => !this.held.has(lock.docId) && !this.ours(this.known.get(lock.docId))));
    const clean = await rollback(this.context, locks, lease.leaseId);
    if (clean && !this.unresolved) {
      if (!(error instanceof StoreUnavailableError && error.context.ambiguous)) return error;
      return new StoreUnavailableError(
        {
          operation: 'acquire',
          cause: error,
        },
        `The lock store failed twice during the acquire of ${describeTarget(request.target)}; nothing is held. Retry.`,
      );
    }
    const mayHoldUntil = this.latestExpiry + this.context.settings.maxClockSkewMs;
    const retry = request.requestId
      ? `Retry with the same requestId (${request.requestId}) to get it back.`
      : `Without a requestId a retry cannot claim it: the keys stay blocked until ${new Date(mayHoldUntil).toISOString()}.`;
    return new LockOutcomeUnknownError(
      { operation: 'acquire', ...(request.requestId ? { requestId: request.requestId } : {}), mayHoldUntil, cause: error },
      `The acquire of ${describeTarget(request.target)} failed (${error.message}) and may still hold some of its keys. ${retry}`,
    );
  }

  // The write loop's plan (write-loop.ts): what to write for the pending keys, and what each answer means.

  /** The conditional write of each pending key, decided on the version last read (lock-document.ts decideAcquire). */
  decide(pending: readonly PlannedKey[], now: number): Array<{ item: PlannedKey; op: WriteOp }> {
    const { settings } = this.context;
    const claim = this.claimAt(now);
    const writes: Array<{ item: PlannedKey; op: WriteOp }> = [];
    const conflicts: ConflictingKey[] = [];
    let clearsAt = now;
    for (const key of pending) {
      // A call that already holds keys yields to a concurrent delivery of itself rather than split the set with it.
      // Work named by an idempotency key is never taken over by another delivery: it waits for it, or hears it is in progress.
      const mayTakeOver = this.held.size === 0 && this.request.work === undefined;
      const decision = decideAcquire(this.known.get(key.docId) ?? null, key, claim, now, settings, mayTakeOver);
      if (decision.kind === 'conflict') {
        conflicts.push(decision.conflict);
        clearsAt = Math.max(clearsAt, decision.clearsAt);
        continue;
      }
      // Not a conflict that waiting ends: the request does not match what the document is (a semaphore of another limit, or a plain lock).
      if (decision.kind === 'permits-mismatch') {
        const { requestedLimit, heldLimit } = decision;
        throw new PermitLimitMismatchError({ key: decision.key, requestedLimit, heldLimit });
      }
      // Not a conflict the call waits out either: a waiter in the call would hold a ticket beyond the
      // bound the whole time. Refused at once, in the call as through a channel; nothing was written.
      if (decision.kind === 'queue-full') {
        const { key: full, limit, queued } = decision;
        throw new QueueFullError({ key: full, limit, queued, retryAfterMs: settings.maxRetryAfterMs });
      }
      // An operator's drain took our ticket out: the call ends as a channel waiter's wait does, and never joins again.
      if (decision.kind === 'drained') throw drainedError(key.key, this.lease.leaseId, decision.note);
      const op = this.note(key, decision);
      if (op) writes.push({ item: key, op });
    }
    if (conflicts.length > 0) {
      throw new LockHeldError({ conflicts, retryAfterMs: Math.max(settings.retry.baseDelayMs, Math.min(settings.maxRetryAfterMs, clearsAt - now)) });
    }
    if (writes.length > 0) this.latestExpiry = claim.expiresAt;
    return writes;
  }

  /** What a decision tells about a key; the write it needs, if any. */
  private note(key: PlannedKey, decision: Exclude<Decision, { kind: 'conflict' | 'permits-mismatch' | 'queue-full' | 'drained' }>): WriteOp | undefined {
    if (decision.kind === 'claimed') {
      this.claimedByThisCall = decision.holder;
      return undefined;
    }
    if (decision.kind === 'already-held') {
      this.hold(key, decision.lock, false);
      return undefined;
    }
    if (decision.kind === 'queued') {
      this.queuedTicket = decision.ticket;
      this.joined = true;
      this.queuedIn = this.known.get(key.docId) ?? this.queuedIn;
      return decision.op;
    }
    if (decision.reused) this.reusedIn.add(key.docId);
    return decision.op;
  }

  applied(key: PlannedKey, outcome: Applied, op: WriteOp): void {
    // A delete: our ticket joined and ran out in one write (its channel hears it failed).
    if (op.kind === 'delete') return;
    const written = writtenLock(outcome, op.body);
    if (this.ours(written)) this.hold(key, written, this.reusedIn.has(key.docId));
    else this.queuedIn = written;
  }

  async reread(changed: PlannedKey[]): Promise<PlannedKey[]> {
    const docIds = changed.map((key) => key.docId);
    // A ticket that did not go in: a lagging copy would keep showing the version it was conditioned on, so the primary answers.
    this.known = this.joined ? await this.counted.readPrimary(docIds) : await this.readConfirmed(docIds);
    return changed;
  }

  /**
   * A request's answer was lost: the primary tells what landed (a copy cut off from the cluster could
   * say "not there" for a write that did land); whatever holds our lease is ours to give back if the attempt fails.
   */
  async resolveLost(notApplied: PlannedKey[]): Promise<PlannedKey[]> {
    this.guardsRead = undefined;
    try {
      this.known = await this.counted.readPrimary(notApplied.map((key) => key.docId));
    } catch (readError) {
      this.unresolved = true;
      throw readError;
    }
    for (const key of notApplied) {
      const lock = this.known.get(key.docId);
      if (lock && this.ours(lock)) this.hold(key, lock, false);
      else if (lock && !this.held.has(key.docId) && lock.body.holders.some((holder) => noteOf(holder.restores, this.lease.leaseId))) {
        this.notedIn.set(key.docId, lock);
      }
    }
    return notApplied;
  }

  keysOf(pending: readonly PlannedKey[]): string[] {
    return pending.map((key) => key.key);
  }

  readAlong(read: Map<string, StoredLock | null>): void {
    this.guardsRead = read;
  }

  /** What this attempt asks of each document at `now`: our lease, and our ticket if it may queue. */
  private claimAt(now: number): Claim {
    const { request, lease, call } = this;
    const { queueUntil } = this.waiting;
    return {
      leaseId: lease.leaseId,
      proof: lease.proof,
      owner: request.owner,
      requestId: request.requestId ?? null,
      call,
      expiresAt: now + request.ttlMs,
      ...(request.permits ? { permits: request.permits } : {}),
      ...(request.work ? { work: request.work.keyHash } : {}),
      ...(queueUntil !== undefined
        ? {
            queue: {
              ticket: lease.leaseId,
              owner: request.owner,
              mode: this.keys[0]!.mode,
              ttlMs: request.ttlMs,
              expiresAt: queueUntil,
              request: request.requestId ?? null,
              call,
              ...(request.wake ? { wake: request.wake } : {}),
              ...(request.permits ? { permits: request.permits.count } : {}),
            },
          }
        : {}),
    };
  }

  private hold(key: PlannedKey, lock: StoredLock, reused: boolean): void {
    this.held.set(key.docId, { key, lock, reused: reused || (this.held.get(key.docId)?.reused ?? false) });
  }

  /** Whether the document holds our lease (a type guard would narrow a failed check to "no document at all"). */
  private ours(lock: StoredLock | null | undefined): boolean {
    return lock?.body.holders.some((holder) => holder.lease === this.lease.leaseId) ?? false;
  }

  /** A plain read may come from a copy that lags: one that shows our lease counts only once the primary confirms it. */
  private async readConfirmed(docIds: string[]): Promise<Map<string, StoredLock | null>> {
    const found = await this.counted.read(docIds);
    const claimed = docIds.filter((docId) => this.ours(found.get(docId)));
    if (claimed.length > 0) for (const [docId, lock] of await this.counted.readPrimary(claimed)) found.set(docId, lock);
    return found;
  }
}

/** What makes two acquires the same call: target, mode and owner (and the permits of a semaphore's: a retry takes over as many as it holds). */
export function callFingerprint(request: AcquireRequest): string {
  const { target, permits } = request;
  const call = [target.namespace, target.granularity, rulesFor(target.granularity).identity(target), request.mode, request.owner];
  return hash('sha256', JSON.stringify(permits ? [...call, permits.limit, permits.count] : call), 'base64url').slice(0, 22);
}
