/**
 * The lock service's wire contract: the JSON a caller sends and gets back, over HTTP and by direct
 * invocation alike, and the catalogue of error names. The functions and the client package both
 * import this one module; it imports nothing, so either side can take it without the other.
 */

export type Granularity = 'global' | 'document' | 'tree';
/** Every granularity, coarsest first: the record makes the compiler refuse a list that misses one or names another. */
export const GRANULARITY_NAMES = Object.keys({ global: true, document: true, tree: true } satisfies Record<Granularity, true>) as readonly Granularity[];
export type LockMode = 'exclusive' | 'shared';
/** Multi-granularity modes a lock document records: intentions (IS, IX) on ancestors, S or X on the target. */
export type HolderMode = 'IS' | 'IX' | 'S' | 'X';

/** A semaphore's share: `count` of `limit` permits. */
export interface PermitsBody {
  limit: number;
  /** Default 1. */
  count?: number;
}

/** POST /acquire, or a direct invocation of acquire. */
export interface AcquireBody {
  namespace: string;
  granularity: Granularity;
  /** Document locks: one or many ids, taken all or nothing. */
  ids?: string[];
  /** Tree locks: an absolute path such as `/projects/a/readme.txt`. */
  path?: string;
  /** Default `exclusive`. */
  mode?: LockMode;
  owner: string;
  /** Lease length; the server's default when left out. */
  ttlMs?: number;
  /**
   * How long the call may wait for a held lock before it answers LockHeldError; default 0. A single
   * key waits in the lock's queue and is served in arrival order.
   */
  waitMs?: number;
  /** Names one logical call: a retry with the same requestId gets that call's grant back, never a second one. */
  requestId?: string;
  /**
   * A semaphore ("at most `limit` at a time"): take `count` (default 1) of the target's `limit`
   * permits. A document target with one id, or a tree path; exclusive mode. Every acquire of one
   * semaphore gives the same limit (else PermitLimitMismatchError). The grant is a lease like any
   * other: renew and release it with its leaseToken.
   */
  permits?: PermitsBody;
  /**
   * Wait in the lock's queue, not in the call (single key, waitMs 0, with a requestId): the call
   * answers at once, `status: 'queued'`. When the lock is reserved for the ticket, the channel gets
   * `status: 'ready'`; the waiter then claims it with the same acquire (target, mode, owner,
   * requestId) without `wake`, and that answer is the grant. A wake-up is a hint, never a grant.
   */
  wake?: { taskToken?: string; queueUrl?: string; eventBusName?: string };
  /** How long a `wake` waiter's ticket may wait in the queue; the server's default (5 minutes) when left out. */
  queueTtlMs?: number;
  /**
   * Run the work once (exclusive mode): names it (`true`: by the requestId). When it was completed,
   * the answer is `status: 'completed'` with the recorded result and nothing is held; while another
   * delivery has it, WorkInProgressError. Otherwise the grant takes the work on: release it with `record`.
   */
  idempotencyKey?: string | true;
}

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
  namespace: string;
  granularity: Granularity;
  mode: LockMode;
  owner: string;
}

export interface RenewBody {
  leaseToken: string;
  ttlMs?: number;
}

export interface ReleaseBody {
  leaseToken: string;
  /**
   * A lease acquired with an idempotencyKey: the outcome to record before the release. Only while the
   * lease still holds the lock (else LeaseLostError, and the lease is released without a record).
   * `completed` answers later calls with `result` (JSON, 32 KiB at most: record a reference to a
   * larger one) until `ttlMs` (default one day); `failed` lets the next delivery run the work again.
   */
  record?: { status: 'completed' | 'failed'; result?: unknown; ttlMs?: number };
}

/** GET /inspect: who holds a target's keys now (realtime). */
export interface InspectQuery {
  namespace: string;
  granularity: Granularity;
  ids?: string[];
  path?: string;
  mode?: LockMode;
}

/** GET /locks: locks by namespace, owner or path prefix (search: about a second behind). */
export interface ListQuery {
  namespace?: string;
  granularity?: Granularity;
  owner?: string;
  pathPrefix?: string;
  limit?: number;
  includeExpired?: boolean;
}

export interface SweepBody {
  batchSize?: number;
  maxBatches?: number;
}

/**
 * A fencing token: a non-negative integer carried as a decimal string (`"10010000000000042"`),
 * because it passes 2^53, which a JSON number cannot carry exactly. It is not padded: a later
 * token can be longer (a lock index's epoch 10 gives tokens one digit longer than epoch 9). Larger
 * is later. Compare as integers (`compareFencingTokens`, `BigInt`, a Java `long`), never as strings.
 */
export type FencingToken = string;

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
  /** Waiters the sweeper's writes handed a lock over to. */
  handedOver: number;
  deletedLocks: number;
  prunedHolders: number;
  conflicts: number;
  batches: number;
}

/** A target as a request names it. */
export interface TargetBody {
  namespace: string;
  granularity: Granularity;
  ids?: string[];
  path?: string;
}

/** POST /revoke: the holders an operator took off the target's own keys (times in epoch ms). */
export interface RevocationBody {
  target: TargetBody;
  /** The caller's principal as the namespace policy matched it. */
  by: string;
  reason: string;
  at: number;
  revoked: Array<{ key: string; leaseId: string; owner: string; mode: HolderMode; fencingToken: string; expiresAt: number }>;
  /** The largest token of the revoke's writes: above every revoked holder's; null when nothing was held. */
  fencingToken: string | null;
  /** Each key the revoke wrote, with its write's token: every later grant on that key carries a larger one. */
  keys: Array<{ key: string; fencingToken: string }>;
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

/** GET /status: the lock index as an operator sees it. */
export interface LockIndexStatusBody {
  index: string;
  incarnation: string;
  epoch: number;
  shards: { primaries: number; replicas: number };
  locks: number;
  holders: number;
  waiters: number;
  workRecords: number;
  auditRecords: number;
  oldestLease: { namespace: string; granularity: Granularity; key: string; owner: string; grantedAt: number; expiresAt: number } | null;
  scanned: number;
  complete: boolean;
  at: number;
}

export interface ConflictBody {
  key: string;
  granularity: Granularity;
  requestedMode: HolderMode;
  holders: Array<{ owner: string; mode: HolderMode; expiresAt: string; expiresAtMs: number }>;
  reason?: 'request_id_reused' | 'duplicate_in_progress' | 'queued_waiters';
  /** A semaphore: its limit, and the permits its holders and reserved waiters take now. */
  permits?: { limit: number; taken: number };
}

export interface FieldIssueBody {
  /** Dotted path of the offending request field, e.g. `ids.3` or `path`. */
  field: string;
  /** Short machine-readable rule name, e.g. `max`, `required`, `unknown_field`. */
  rule: string;
  message: string;
}

/** Every error answer: the HTTP body, and the `errorMessage` a direct invocation's error carries. */
export interface ErrorBody {
  error: ErrorName;
  message: string;
  retryable?: boolean;
  fields?: FieldIssueBody[];
  conflicts?: ConflictBody[];
  retryAfterMs?: number;
  waitedMs?: number;
  lostKeys?: string[];
  requestId?: string;
  mayHoldUntil?: string;
  /** PermitLimitMismatchError, QueueFullError: the key (document id or tree path). PermitLimitMismatchError: the limits (null: a plain lock). */
  key?: string;
  requestedLimit?: number | null;
  heldLimit?: number | null;
  /** QueueFullError: the key (also above), the queue's limit, and the live tickets in it. */
  limit?: number;
  queued?: number;
  [field: string]: unknown;
}

/** What each operation takes and answers, over HTTP and by direct invocation alike. */
export interface Operations {
  /** A CompletedBody only for a request with an idempotencyKey whose work was completed. */
  acquire: { request: AcquireBody; answer: GrantBody | CompletedBody };
  renew: { request: RenewBody; answer: RenewalBody };
  release: { request: ReleaseBody; answer: ReleaseResultBody };
  inspect: { request: InspectQuery; answer: LockStatesBody };
  list: { request: ListQuery; answer: LockStatesBody };
}

export type OperationName = keyof Operations;

export interface ErrorSpec {
  /** The HTTP status of the answer. */
  status: number;
  /** Whether repeating the same call (with the same requestId for acquire) can succeed. */
  retryable: boolean;
  /** The CloudWatch metric a refusal of this kind counts in. */
  metric: string;
  /** Expected refusals are logged at info, store trouble at warn, anything else at error. */
  level: 'info' | 'warn' | 'error';
}

/**
 * Every error the service answers, by name. The name is the contract (the HTTP body's `error`, the
 * error a direct invocation throws and a Step Functions Retry/Catch matches, the client's class);
 * the HTTP status, retryability, metric and log level of each are read from here and nowhere else.
 */
export const ERRORS = {
  /** Bad input: nothing was read or written. The fields say which field broke which rule. */
  ValidationError: { status: 400, retryable: false, metric: 'InvalidRequest', level: 'info' },
  /** The caller may not do this in this namespace (its policy, or its principal is unknown). Nothing was read or written. */
  AccessDeniedError: { status: 403, retryable: false, metric: 'AccessDenied', level: 'info' },
  /** A configured limit on held locks (per owner, per namespace) would be exceeded; nothing was taken. */
  QuotaExceededError: { status: 429, retryable: true, metric: 'QuotaExceeded', level: 'info' },
  /** The key is in use as a semaphore of another limit, or as a plain lock when permits were asked (or the other way round); nothing is held. */
  PermitLimitMismatchError: { status: 409, retryable: false, metric: 'PermitLimitMismatch', level: 'info' },
  /** The lock's queue is full (the service's queue.maxTickets): this waiter did not join, nothing was written. Try again once waiters ahead are served. */
  QueueFullError: { status: 429, retryable: true, metric: 'QueueFull', level: 'info' },
  /** An incompatible holder has a key; this call holds nothing. */
  LockHeldError: { status: 409, retryable: true, metric: 'LockConflict', level: 'info' },
  /** The work an idempotency key names is being done by another delivery; this call holds nothing. Try later: you then get its recorded result, or take it on. */
  WorkInProgressError: { status: 409, retryable: true, metric: 'WorkInProgress', level: 'info' },
  /** The lease exists but the token's secret does not match it. */
  LeaseTokenMismatchError: { status: 403, retryable: false, metric: 'LeaseTokenMismatch', level: 'info' },
  /** A queued waiter's ticket ran out before the lock was reserved for it, or its reservation lapsed unclaimed (told on its wake channel); it holds nothing. */
  LockWaitExpiredError: { status: 409, retryable: true, metric: 'LockWaitExpired', level: 'info' },
  /** The lease is gone (released, or expired and taken over or swept). */
  LeaseLostError: { status: 410, retryable: false, metric: 'LeaseLost', level: 'info' },
  /** A write of this call may have applied: retry with the same requestId. */
  LockOutcomeUnknownError: { status: 503, retryable: true, metric: 'StoreUnavailable', level: 'warn' },
  /** The lock store could not be reached, timed out or pushed back. */
  StoreUnavailableError: { status: 503, retryable: true, metric: 'StoreUnavailable', level: 'warn' },
  /** Too many writers raced on the same lock documents; retry. */
  LockContentionError: { status: 503, retryable: true, metric: 'StoreUnavailable', level: 'warn' },
  /** The lock store refused in a way retrying will not fix (a missing lock index, permissions). */
  StoreRejectedError: { status: 500, retryable: false, metric: 'StoreRejected', level: 'error' },
  /** The lock index's fencing range is spent: create a new lock index. */
  FencingRangeError: { status: 500, retryable: false, metric: 'FencingRange', level: 'error' },
  /** Anything else; the function logs have the details under the correlation id. */
  InternalError: { status: 500, retryable: false, metric: 'InternalError', level: 'error' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorName = keyof typeof ERRORS;

export const ERROR_NAMES = Object.keys(ERRORS) as ErrorName[];

export function isErrorName(name: unknown): name is ErrorName {
  return typeof name === 'string' && Object.hasOwn(ERRORS, name);
}

/** The spec of a name (InternalError's for a name this version does not know). */
export function errorSpecOf(name: unknown): ErrorSpec {
  return isErrorName(name) ? ERRORS[name] : ERRORS.InternalError;
}
