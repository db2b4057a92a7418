/**
 * The lock model: what callers ask for, what the index stores, what the engine answers. What is the
 * same as on the wire (names, modes, reports an operator gets as they are) is the wire contract's own
 * type; the rest differs from its wire form (epoch ms where the wire also has ISO times, typed targets).
 */
import type {
  ConflictBody,
  DrainedBody,
  FencingToken,
  GrantedKeyBody,
  Granularity,
  HolderMode,
  LockIndexStatusBody,
  LockMode,
  ReleaseOutcome,
  RevocationBody,
  RevokedHolderBody,
  SweepReportBody,
} from '../../client/src/wire.js';
import type { LockTarget } from './granularity/index.js';

/** The wire's own (a FencingToken is made in fencing.ts; compare with `compareFencingTokens` or `BigInt`, never as text of different lengths). */
export type { FencingToken, Granularity, HolderMode, ReleaseOutcome } from '../../client/src/wire.js';

/** Where a waiter that is not in the call hears its outcome (wake.ts says how). */
export type WakeChannel =
  /** A Step Functions task waiting with `.waitForTaskToken`: completed with the grant (SendTaskSuccess) or failed (SendTaskFailure). */
  | { kind: 'task'; taskToken: string }
  /** An SQS queue: one message per outcome (a FIFO queue gets the ticket as group and deduplication id). */
  | { kind: 'queue'; queueUrl: string }
  /** An EventBridge bus: one event per outcome, source `es-lease-locks`, detail-type `Lock ready to claim` / `Lock wait failed`. */
  | { kind: 'event'; eventBusName: string };

export type RequestedMode = LockMode;

/** Each granularity's module says what its targets name (granularity/): the union is the registry's. */
export type { LockTarget } from './granularity/index.js';

/** What a permits acquire asks for: `count` of the semaphore's `limit` permits. */
export interface Permits {
  limit: number;
  count: number;
}

export interface AcquireRequest {
  target: LockTarget;
  mode: RequestedMode;
  owner: string;
  ttlMs: number;
  waitMs: number;
  requestId?: string;
  /** A semaphore: take `count` of the target's `limit` permits (docs/permits.md). One key, exclusive mode. */
  permits?: Permits;
  /**
   * Wait in the lock's queue rather than in this call: the acquire answers at once (granted, or
   * queued), and the outcome goes to `wake` (a Step Functions task token, an SQS queue or an
   * EventBridge bus) when the lock is handed over, or when the wait fails. Single-key targets only.
   */
  wake?: WakeChannel;
  /** How long a ticket of a `wake` caller may wait in the queue (its own lease). */
  queueTtlMs?: number;
  /**
   * Work that runs once (operations/work.ts): the hash of the caller's idempotency key (the key itself
   * is never kept). A recorded outcome answers instead of a grant; a grant takes the work on.
   * `payloadHash`: the hash of the payload the work is for (wire/event-path.ts): a record or a live
   * claim of another payload refuses the call (WorkPayloadMismatchError).
   */
  work?: { keyHash: string; payloadHash?: string };
  /**
   * The acquire named its work by a path in its event, and the event had no key there: a plain
   * acquire (no work, no record), whose answer says so.
   */
  missingKeyPath?: string;
}

export type WorkStatus = 'completed' | 'failed';

/**
 * The work an idempotency key names, on a document of its own in the lock index. `claim`: the lease
 * that took it on last (only that lease may record its outcome, docs/protocol.md); `outcome`: what it
 * recorded, kept until `expiresAt`.
 */
export interface StoredWork {
  keyHash: string;
  /** The payload hash of the delivery that took the work on last (and recorded it): none from a caller that gave none. */
  payloadHash?: string;
  claim?: WorkClaim;
  /** `lease`: the lease that recorded it (a retry of that release, whose first answer was lost, finds it recorded). */
  outcome?: { status: WorkStatus; result?: unknown; lease: string; owner: string; fencingToken: FencingToken; recordedAt: number; expiresAt: number };
}

/**
 * Who took the work on. `locks`: the lock documents of its lease, where the sweeper looks before it
 * removes the claim of a lease that may have been renewed. A revoke's fence names no lease (`~revoked`)
 * and keeps the revoked one in `revoked`: nobody can record under it, and only a later lease replaces it.
 */
export interface WorkClaim {
  lease: string;
  owner: string;
  fencingToken: FencingToken;
  claimedAt: number;
  expiresAt: number;
  locks?: string[];
  revoked?: string;
}

/** What a holder records when it releases a lease acquired with an idempotency key. */
export interface WorkRecord {
  status: WorkStatus;
  /** JSON, within the size limit (settings.work.resultBytes): store a larger result elsewhere and record where. */
  result?: unknown;
  ttlMs: number;
}

/** The answer to an acquire whose work was already completed (and not yet expired): nothing is held. */
export interface CompletedWork {
  status: 'completed';
  keyHash: string;
  result?: unknown;
  owner: string;
  /** The fencing token of the lease that recorded it. */
  fencingToken: FencingToken;
  recordedAt: number;
  expiresAt: number;
}

/** One lock document to take, in the order every caller takes them. */
export interface PlannedKey {
  docId: string;
  namespace: string;
  granularity: Granularity;
  /** `*` for global, the id for document, the path for tree. */
  key: string;
  mode: HolderMode;
}

/** One holder's share of a lock document. The lease secret is never stored, only its hash. */
export interface StoredHolder {
  lease: string;
  proof: string;
  owner: string;
  mode: HolderMode;
  expiresAt: number;
  grantedAt: number;
  /**
   * Null only for the holder inserted by the write that produced the document's current
   * (_primary_term, _seq_no): its fencing token is that pair, filled in by the next write.
   */
  fence: FencingToken | null;
  request: string | null;
  /**
   * With `request`: a hash of the call's target, mode and owner. A requestId names one call; a
   * holder of the same requestId but another call is a conflict, never a retry.
   */
  call?: string | null;
  /**
   * The holder of an earlier delivery of the same call that this one took over: put back if this
   * delivery fails before its grant, unless that earlier delivery has given the key up meanwhile.
   */
  restores?: StoredHolder | null;
  /**
   * A holder that claimed a reservation: the ticket it claimed (its wait counts from `queuedAt`). A
   * channel waiter's goes back to the queue if the claim fails before its grant.
   */
  ticket?: StoredTicket;
  /** A semaphore's holder: how many of the document's `permitLimit` permits it holds (docs/permits.md). */
  permits?: number;
  /** Acquired with an idempotency key: the hash of the work it takes on (a revoke fences that work's claim). */
  work?: string;
}

/**
 * A waiter in a lock's queue. It waits for its turn in `position` order; whoever frees the lock
 * reserves it for the head (in the same conditional write), and the waiter claims it with a write of
 * its own (docs/protocol.md). It drops out when its own lease ends, or when its reservation lapses.
 */
export interface StoredTicket {
  /** Its id (a waiter in the call: the lease id of its attempt). */
  ticket: string;
  position: number;
  owner: string;
  mode: HolderMode;
  /** The TTL its grant gets, from the claim that grants it. */
  ttlMs: number;
  queuedAt: number;
  /** The ticket's own lease: a waiter that is gone drops out after it. */
  expiresAt: number;
  wake?: WakeChannel;
  request: string | null;
  call: string | null;
  /** Its claim failed once (what is above or below the target still blocked it): nobody behind it is served before this instant, when it is reserved again. */
  retryAt?: number;
  /**
   * Set by the write that served it: the lock is kept for this waiter until then (a reservation,
   * never a grant). Only the waiter's own conditional write (its claim) makes it a holder; others see
   * the reservation lapse once this instant plus the clock skew allowance has passed.
   */
  reservedUntil?: number;
  /** A reserved channel waiter that has not claimed by then is woken again (by the sweeper). */
  rewakeAt?: number;
  /** A semaphore's waiter: the permits its claim will hold. */
  permits?: number;
}

export interface LockDocument {
  namespace: string;
  granularity: Granularity;
  key: string;
  lockId: string;
  holders: StoredHolder[];
  /** A work document (operations/work.ts): never holders, kept until its claim or recorded outcome ends. */
  work?: StoredWork;
  /** Absent when nobody holds the document (a tree node kept for `lockedBelow`): sweeps and live searches skip it. */
  minExpiresAt?: number;
  maxExpiresAt?: number;
  updatedAt: number;
  /**
   * Tree locks: some lock below this path has been taken, so a lock on it must look for live locks
   * below (docs/tree-locks.md). Set once by the first lock below, never cleared: a document that has
   * it is kept, with no holders, when its last holder goes.
   */
  lockedBelow?: boolean;
  /** Waiters, in position order (absent when none). */
  queue?: StoredTicket[];
  /** The next ticket's position. */
  nextPosition?: number;
  /** A semaphore: its holders' permits add up to at most this. Only while it has holders or waiters (docs/permits.md). */
  permitLimit?: number;
  /** An operator's audit document (operations/revoke.ts): never holders, kept until `keepUntil`. */
  revocation?: RevocationRecord;
  /** What an operator's drains took out of the queue that its waiters in the call must still learn (docs/protocol.md, T13). */
  drained?: DrainNote[];
}

/**
 * One drain of this document's queue, as its waiters in the call learn it: they look at the document,
 * not at a channel. Kept until the last of them has stopped looking (`keepUntil`, its deadline: its
 * ticket's end plus the clock skew allowance), and the document with it. One per drain, naming at most
 * the tickets the queue held (`queue.maxTickets`), by id only.
 */
export interface DrainNote {
  /** The waiters in the call it took out, by ticket id (channel waiters are told on their channel). */
  tickets: string[];
  by: string;
  reason: string;
  at: number;
  keepUntil: number;
}

export interface HolderView {
  owner: string;
  mode: HolderMode;
  expiresAt: number;
  fencingToken: FencingToken;
  expired: boolean;
  /** A semaphore's holder: the permits it holds. */
  permits?: number;
}

/** A conflict as the wire says it, its holders' expiry in epoch ms only. */
export interface ConflictingKey extends Omit<ConflictBody, 'holders'> {
  holders: Array<{ owner: string; mode: HolderMode; expiresAt: number }>;
}

export type GrantedKey = GrantedKeyBody;

export interface Grant {
  leaseToken: string;
  leaseId: string;
  /** The largest fencing token of the set; strictly larger than any earlier grant's token on any of these keys. */
  fencingToken: FencingToken;
  expiresAt: number;
  ttlMs: number;
  target: LockTarget;
  mode: RequestedMode;
  owner: string;
  keys: GrantedKey[];
  /**
   * True when this call took over the live grant of an earlier call with the same requestId, target,
   * mode and owner (a retry, or a duplicate delivery): that earlier lease is revoked and this grant's
   * fencing token is larger than its.
   */
  reused: boolean;
  /** A grant served from the queue: how long its waiter waited there. */
  waitedMs?: number;
  /** A semaphore's grant: the permits it holds, of the limit. */
  permits?: Permits;
  /** An acquire that named its work by a path in its event, which had no key there: this grant took no work on. */
  missingKeyPath?: string;
}

/** An acquire with a wake channel that could not be granted at once: its place in the lock's queue. */
export interface Queued {
  status: 'queued';
  ticket: string;
  /** How many waiters are ahead of it. */
  ahead: number;
  /** When the ticket drops out if it has not been served. */
  expiresAt: number;
  /** Reserved for this waiter until then: claim it (the same acquire again, without `wake`) before. */
  reservedUntil?: number;
  target: LockTarget;
  mode: RequestedMode;
  owner: string;
  /**
   * A delivery of a `wake` call again after the call's own claim: the lock is already held by that
   * claim, so no wake-up follows (the same ticket, never a second one; never a grant).
   */
  claimed?: true;
}

export interface Renewal {
  leaseToken: string;
  leaseId: string;
  fencingToken: FencingToken;
  expiresAt: number;
  ttlMs: number;
}

export interface Release {
  leaseId: string;
  outcome: ReleaseOutcome;
  releasedKeys: string[];
  missingKeys: string[];
  /** How long the lease was held, when its token says when it was granted. */
  heldMs?: number;
  /** Waiters this release handed the lock over to (in the write that freed it). */
  handedOver: number;
  /** The outcome recorded for the lease's work, when the release asked to record one (and it was). */
  recorded?: WorkStatus;
}

export interface LockState {
  key: string;
  granularity: Granularity;
  namespace: string;
  holders: HolderView[];
  /** A semaphore: its limit (its holders show their permits). */
  permitLimit?: number;
}

export type SweepReport = SweepReportBody;

export type RevokedHolder = RevokedHolderBody;

/**
 * An operator's revoke, as its audit document keeps it (its own document in the lock index, written
 * before the revoke's writes, kept for settings.admin.auditRetentionMs): who, when, why, and on what.
 */
export interface RevocationRecord {
  action: 'revoke' | 'drain';
  target: LockTarget;
  by: string;
  reason: string;
  at: number;
  keepUntil: number;
}

/** The answer to a revoke (the wire's, with the typed target): the holders taken off the target's own keys, and the revoke's own fencing token. */
export interface Revocation extends Omit<RevocationBody, 'target'> {
  target: LockTarget;
}

/** The answer to a drain (the wire's, with the typed target): the tickets it took out of the target's queues (their channel waiters are told). */
export interface Drained extends Omit<DrainedBody, 'target'> {
  target: LockTarget;
}

/** The lock index as an operator sees it (LockStore.status). */
export type LockIndexStatus = LockIndexStatusBody;
