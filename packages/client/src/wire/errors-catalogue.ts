/**
 * Every error the service answers: its body, and the catalogue that gives each name its HTTP status,
 * retryability, metric and log level (read from here and nowhere else); and the small catalogue of
 * the errors that never cross the wire, which gives each its retryability.
 */
import type { Granularity, HolderMode } from './granularities.js';

/**
 * Why a holder that is not of an incompatible mode blocks: it holds the same requestId for another
 * call (`request_id_reused`), it is a concurrent delivery of this very call that got there first
 * while this one already held other keys (`duplicate_in_progress`), or waiters are queued ahead
 * (`queued_waiters`).
 */
export type ConflictReason = 'request_id_reused' | 'duplicate_in_progress' | 'queued_waiters';

export interface ConflictBody {
  key: string;
  granularity: Granularity;
  requestedMode: HolderMode;
  holders: Array<{ owner: string; mode: HolderMode; expiresAt: string; expiresAtMs: number }>;
  reason?: ConflictReason;
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
  /** WorkInProgressError, WorkPayloadMismatchError: the hash that names the work. */
  keyHash?: string;
  /** WorkPayloadMismatchError: what holds the key (`completed`, `in_progress`), and the first characters of its payload hash and of this call's. */
  found?: 'completed' | 'in_progress';
  storedPayloadHash?: string;
  payloadHash?: string;
  [field: string]: unknown;
}

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
  /**
   * The work an idempotency key names was completed, or is in progress, for another payload (its
   * hash differs from this call's): nothing was written, nothing is held. Not retryable: the same key
   * with this payload is refused until that record or claim ends.
   */
  WorkPayloadMismatchError: { status: 422, retryable: false, metric: 'WorkPayloadMismatch', level: 'info' },
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

/**
 * An answer that names no error of this catalogue (a name of a later version, or none at all: a
 * gateway's own 429, 502, 503 or 504): its status as it came, and retryable as its body says, else
 * as its status says.
 */
export function unnamedErrorSpec(status: number, retryable?: boolean): Pick<ErrorSpec, 'status' | 'retryable'> {
  return { status, retryable: retryable ?? [429, 502, 503, 504].includes(status) };
}

/**
 * The errors that never cross the wire, by name: raised and caught in one process (the client's own
 * refusals, the fenced-write helpers' on either side, the wake-up channels'), so no HTTP status,
 * metric or log level of the service's, only whether trying again can succeed. Apart from ERRORS so
 * that every name there stays one the service answers (the OpenAPI enum, the client's classes, a
 * Step Functions Retry/Catch). Should one escape a handler, it answers as an InternalError.
 */
export const LOCAL_ERRORS = {
  /** The client's: the Lambda function's remaining time is too short for the shortest lease; nothing was sent. */
  InsufficientTimeError: { retryable: false },
  /** The client's fenced write: the document carries a newer fencing token (this holder lost the lock). */
  FencedOutError: { retryable: false },
  /** The client's fenced create: a live document is there already; nothing was written. */
  FencedDocumentExistsError: { retryable: false },
  /** The client's fenced partial update: no document to merge into (or a tombstone); nothing was written. */
  FencedDocumentMissingError: { retryable: false },
  /** The functions' fenced write (store/fenced-document.ts), FencedOutError's twin: a newer fencing token is there. */
  StaleFencingTokenError: { retryable: false },
  /** The functions' wake-up channels: the message may not have reached the waiter; it is delivered again later. */
  WakeDeliveryError: { retryable: true },
} as const satisfies Record<string, Pick<ErrorSpec, 'retryable'>>;

export type LocalErrorName = keyof typeof LOCAL_ERRORS;

export function isLocalErrorName(name: unknown): name is LocalErrorName {
  return typeof name === 'string' && Object.hasOwn(LOCAL_ERRORS, name);
}

/** Whether trying again can succeed, by name: either catalogue's word (InternalError's for a name in neither). */
export function retryableOf(name: unknown): boolean {
  return isLocalErrorName(name) ? LOCAL_ERRORS[name].retryable : errorSpecOf(name).retryable;
}
