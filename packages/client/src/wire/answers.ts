/** What the service answers: grants, renewals, releases, lock states and the operators' reports. */
import type { Granularity, HolderMode, LockMode, TargetBody } from './granularities.js';

/**
 * A fencing token: a non-negative integer carried as a decimal string (`"10010000000000042"`),
 * because it passes 2^53, which a JSON number cannot carry exactly. It is not padded: a later
 * token can be longer (a lock index's epoch 10 gives tokens one digit longer than epoch 9). Larger
 * is later. Compare as integers (`compareFencingTokens`, `BigInt`, a Java `long`), never as strings.
 */
export type FencingToken = string;

/** The answer of an acquire with an idempotencyKey whose work was completed (HTTP 200): nothing is held. */
export interface CompletedBody {
  status: 'completed';
  /** The hash that names the work (the key itself is not kept). */
  keyHash: string;
  result?: unknown;
  owner: string;
  /** The fencing token of the lease that recorded it. */
  fencingToken: FencingToken;
  recordedAt: string;
  expiresAt: string;
  expiresAtMs: number;
}

/** The answer of an acquire with `wake` (HTTP 202): its place in the queue. */
export interface QueuedBody {
  status: 'queued';
  /** The ticket; every message on the wake channel names it. */
  ticket: string;
  /** Waiters ahead of it when it joined. */
  ahead: number;
  expiresAt: string;
  expiresAtMs: number;
  /** Reserved for it at once (the lock was free): claim before this instant, as after a `ready` wake-up. */
  reservedUntilMs?: number;
  /** A delivery of this `wake` call again after its own claim: that claim holds the lock, so no wake-up follows (the same ticket; nothing written). */
  claimed?: true;
  namespace: string;
  granularity: Granularity;
  mode: LockMode;
  owner: string;
}

export interface GrantedKeyBody {
  key: string;
  mode: HolderMode;
  fencingToken: FencingToken;
}

export interface GrantBody {
  leaseToken: string;
  /** Strictly larger than every earlier grant's token on these keys; for a set, the largest of its keys'. See FencingToken. */
  fencingToken: FencingToken;
  expiresAt: string;
  expiresAtMs: number;
  ttlMs: number;
  namespace: string;
  granularity: Granularity;
  mode: LockMode;
  owner: string;
  keys: GrantedKeyBody[];
  /** True when this call took over the live grant of an earlier delivery of the same requestId. */
  reused: boolean;
  /** A grant served from the lock's queue: how long it waited there (ms). */
  waitedMs?: number;
  /** A semaphore's grant: the permits it holds, of the limit. */
  permits?: { limit: number; count: number };
  /**
   * The acquire named its work by `eventKeyPath` and the event had no key there (without
   * `throwOnNoKey`): this grant took no work on, and its release records nothing.
   */
  missingKeyPath?: string;
}

export interface RenewalBody {
  /** Use this token from now on. */
  leaseToken: string;
  /** The grant's fencing token: a renewal keeps it. */
  fencingToken: FencingToken;
  expiresAt: string;
  expiresAtMs: number;
  ttlMs: number;
}

export type ReleaseOutcome = 'released' | 'expired' | 'not_held' | 'partially_held';

export interface ReleaseResultBody {
  outcome: ReleaseOutcome;
  releasedKeys: string[];
  missingKeys: string[];
  /** The outcome recorded for the lease's work (a release with `record`). */
  recorded?: 'completed' | 'failed';
}

export interface HolderBody {
  owner: string;
  mode: HolderMode;
  fencingToken: FencingToken;
  expiresAt: string;
  expiresAtMs: number;
  expired: boolean;
  /** A semaphore's holder: the permits it holds. */
  permits?: number;
}

export interface LockStateBody {
  key: string;
  namespace: string;
  granularity: Granularity;
  holders: HolderBody[];
  /** A semaphore: its limit (its holders show their permits). */
  permitLimit?: number;
}

export interface LockStatesBody {
  locks: LockStateBody[];
}

export interface SweepReportBody {
  scanned: number;
  /** Waiters the sweeper's writes handed a lock over to (the lock was free of live holders). */
  handedOver: number;
  deletedLocks: number;
  prunedHolders: number;
  conflicts: number;
  batches: number;
}

/** One holder an operator's revoke took off a lock document (times in epoch ms). */
export interface RevokedHolderBody {
  key: string;
  leaseId: string;
  owner: string;
  mode: HolderMode;
  fencingToken: FencingToken;
  expiresAt: number;
}

/** POST /revoke: the holders an operator took off the target's own keys (times in epoch ms). */
export interface RevocationBody {
  target: TargetBody;
  /** The caller's principal as the namespace policy matched it. */
  by: string;
  reason: string;
  at: number;
  revoked: RevokedHolderBody[];
  /** The largest token of the revoke's writes: above every revoked holder's; null when nothing was held. */
  fencingToken: FencingToken | null;
  /** Each key the revoke wrote, with its write's token: every later grant on that key carries a larger one. */
  keys: Array<{ key: string; fencingToken: FencingToken }>;
  /** Waiters the revoke's writes handed the lock over to. */
  handedOver: number;
  /** Keys outside the target the revoked leases were taken off too (intentions above, a document lease's other ids). */
  alsoReleased: string[];
}

/** POST /drain: the tickets an operator took out of the target's queues. */
export interface DrainedBody {
  target: TargetBody;
  by: string;
  reason: string;
  at: number;
  dropped: Array<{ key: string; ticket: string; owner: string }>;
  /** Channel waiters told that their wait failed. */
  told: number;
}

/** GET /status: the lock index as an operator sees it (times in epoch ms). */
export interface LockIndexStatusBody {
  index: string;
  incarnation: string;
  epoch: number;
  shards: { primaries: number; replicas: number };
  /** Documents with a live holder. */
  locks: number;
  holders: number;
  waiters: number;
  workRecords: number;
  /** Operators' audit records kept (revokes, drains). */
  auditRecords: number;
  oldestLease: { namespace: string; granularity: Granularity; key: string; owner: string; grantedAt: number; expiresAt: number } | null;
  /** Documents the counts come from; `complete` false when the scan stopped at its limit. */
  scanned: number;
  complete: boolean;
  at: number;
}
