/**
 * Every error the lock engine can raise. Handlers map these by `name` (HTTP status, or the error
 * name a Step Functions `Retry`/`Catch` matches), so names are part of the public contract.
 *
 * One constructor shape for all: `(message, details)`, where `details` carries the error's own
 * fields and an optional `cause`. A message left undefined is written from the details; the HTTP
 * client passes the server's message instead.
 */
import type { ConflictingKey } from './model.js';

export interface FieldIssue {
  /** Dotted path of the offending request field, e.g. `ids.3` or `path`. */
  field: string;
  /** Short machine-readable rule name, e.g. `too_long`, `absolute_path`. */
  rule: string;
  message: string;
}

export interface ErrorCause {
  cause?: unknown;
}

export abstract class LockError extends Error {
  /** Whether repeating the same call later can succeed. */
  abstract readonly retryable: boolean;

  constructor(message: string, details: ErrorCause) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
  }
}

/** Bad input. Nothing was read or written. */
export class ValidationError extends LockError {
  override readonly name = 'ValidationError';
  readonly retryable = false;
  readonly fields: FieldIssue[];
  constructor(message: string | undefined, details: { fields: FieldIssue[] } & ErrorCause) {
    super(message ?? `Invalid request: ${details.fields.map((issue) => `${issue.field}: ${issue.message}`).join('; ')}`, details);
    this.fields = details.fields;
  }
}

/** Why a call was refused access: see AccessDeniedError. */
export type AccessDeniedReason =
  /** No namespace policy is configured: every namespace-scoped call is refused. */
  | 'no_policy'
  /** An HTTP call that carries no IAM principal (its route is not AWS_IAM-authorized). */
  | 'anonymous'
  /** The caller is named by no statement of the policy. */
  | 'unknown_principal'
  /** The caller is in the policy, but no statement allows this action in this namespace. */
  | 'not_allowed'
  /** Break glass (revoke, drain): `allow-all` does not grant it, only a statement that names the action. */
  | 'explicit_only'
  /** A list without a namespace, by a caller who may list some namespaces but not every one. */
  | 'namespace_required';

/**
 * The namespace policy does not let this caller do this in this namespace, or does not know the
 * caller. Nothing was read or written.
 */
export class AccessDeniedError extends LockError {
  override readonly name = 'AccessDeniedError';
  readonly retryable = false;
  readonly context: { action: string; reason: AccessDeniedReason; namespace?: string; principal?: string };
  constructor(message: string | undefined, details: { action: string; reason: AccessDeniedReason; namespace?: string; principal?: string } & ErrorCause) {
    const who = details.principal ?? 'the caller';
    super(message ?? `${who} may not ${details.action}${details.namespace ? ` in namespace ${details.namespace}` : ''} (${details.reason})`, details);
    const { cause: _, ...context } = details;
    this.context = context;
  }
}

/**
 * A configured limit on live locks (per owner, or per namespace) would be exceeded: nothing was
 * taken. The count behind it comes from search, about a second behind, so the limit is a guard rail
 * that can be passed by a few concurrent calls, never a safety property.
 */
export class QuotaExceededError extends LockError {
  override readonly name = 'QuotaExceededError';
  readonly retryable = true;
  readonly context: { per: 'owner' | 'namespace'; subject: string; limit: number; held: number; requested: number };
  constructor(
    message: string | undefined,
    details: { per: 'owner' | 'namespace'; subject: string; limit: number; held: number; requested: number } & ErrorCause,
  ) {
    super(
      message ??
        `Quota exceeded: ${details.per} ${details.subject} holds ${details.held} live lock${details.held === 1 ? '' : 's'} (limit ${details.limit} per ${details.per}); this call asks for ${details.requested} more`,
      details,
    );
    const { cause: _, ...context } = details;
    this.context = context;
  }
}

/** Someone else holds an incompatible lock on at least one key; this call holds nothing. */
export class LockHeldError extends LockError {
  override readonly name = 'LockHeldError';
  readonly retryable = true;
  readonly conflicts: ConflictingKey[];
  /** A suggested delay before trying again. */
  readonly retryAfterMs: number;
  /** How long the call waited (`waitMs`) before giving up; 0 when it did not wait. */
  readonly waitedMs: number;
  constructor(message: string | undefined, details: { conflicts: ConflictingKey[]; retryAfterMs: number; waitedMs?: number } & ErrorCause) {
    const held = details.conflicts.map((conflict) => {
      const holders = conflict.holders.map((holder) => `${holder.mode} by ${holder.owner}`).join(', ');
      return `${conflict.key} (${conflict.permits ? `${conflict.permits.taken} of ${conflict.permits.limit} permits taken: ` : ''}${holders})`;
    });
    super(message ?? `Lock held: ${held.join('; ')}`, details);
    this.conflicts = details.conflicts;
    this.retryAfterMs = details.retryAfterMs;
    this.waitedMs = details.waitedMs ?? 0;
  }
}

/**
 * The document is in use in another way than this acquire asks: a semaphore with another limit
 * (every acquire of one semaphore gives the same `permits.limit`), a semaphore asked for as a plain
 * lock, or a plain lock asked for with permits. A limit of null stands for a plain lock. Nothing is
 * held; waiting would not help while the document is in use (docs/permits.md).
 */
export class PermitLimitMismatchError extends LockError {
  override readonly name = 'PermitLimitMismatchError';
  readonly retryable = false;
  readonly key: string;
  readonly requestedLimit: number | null;
  readonly heldLimit: number | null;
  constructor(message: string | undefined, details: { key: string; requestedLimit: number | null; heldLimit: number | null } & ErrorCause) {
    const { key, requestedLimit, heldLimit } = details;
    const asked = requestedLimit === null ? 'a plain lock' : `permits of a limit of ${requestedLimit}`;
    const held = heldLimit === null ? 'held as a plain lock' : `a semaphore with a limit of ${heldLimit} permits`;
    super(message ?? `${key} is ${held}; this acquire asks for ${asked}`, details);
    this.key = key;
    this.requestedLimit = requestedLimit;
    this.heldLimit = heldLimit;
  }
}

/**
 * The lock's queue already holds `limit` live tickets (settings queue.maxTickets): this waiter did not
 * join, and nothing was written. A waiter already in the queue is never refused. Try again once
 * waiters ahead have been served.
 */
export class QueueFullError extends LockError {
  override readonly name = 'QueueFullError';
  readonly retryable = true;
  readonly key: string;
  readonly limit: number;
  readonly queued: number;
  /** A suggested delay before trying again. */
  readonly retryAfterMs: number;
  constructor(message: string | undefined, details: { key: string; limit: number; queued: number; retryAfterMs: number } & ErrorCause) {
    const { key, limit, queued, retryAfterMs } = details;
    super(message ?? `the queue of lock ${key} is full (${limit} tickets, queue.maxTickets); nothing was written`, details);
    this.key = key;
    this.limit = limit;
    this.queued = queued;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The lease this token names is gone: released, or expired and taken over or swept. */
export class LeaseLostError extends LockError {
  override readonly name = 'LeaseLostError';
  readonly retryable = false;
  readonly leaseId: string;
  readonly lostKeys: string[];
  constructor(message: string | undefined, details: { leaseId: string; lostKeys: string[] } & ErrorCause) {
    super(message ?? `Lease ${details.leaseId} is no longer held on ${details.lostKeys.join(', ')}`, details);
    this.leaseId = details.leaseId;
    this.lostKeys = details.lostKeys;
  }
}

/**
 * The work an idempotency key names is being done by another delivery (its lease holds the lock, or
 * may still): this call holds nothing. Try again later: it then gets the recorded result, or takes
 * the work on if that delivery failed or died.
 */
export class WorkInProgressError extends LockError {
  override readonly name = 'WorkInProgressError';
  readonly retryable = true;
  readonly context: { keyHash: string; owner?: string; since?: number; retryAfterMs: number };
  constructor(message: string | undefined, details: { keyHash: string; owner?: string; since?: number; retryAfterMs: number } & ErrorCause) {
    super(message ?? `The work ${details.keyHash} is in progress${details.owner ? ` (taken on by ${details.owner})` : ''}; nothing is held`, details);
    const { cause: _, ...context } = details;
    this.context = context;
  }
}

/** The lease exists but the token's secret does not match it. Nothing was changed. */
export class LeaseTokenMismatchError extends LockError {
  override readonly name = 'LeaseTokenMismatchError';
  readonly retryable = false;
  readonly leaseId: string;
  constructor(message: string | undefined, details: { leaseId: string } & ErrorCause) {
    super(message ?? `The token does not own lease ${details.leaseId}`, details);
    this.leaseId = details.leaseId;
  }
}

/**
 * Elasticsearch could not be reached, timed out or pushed back (429/5xx). When `ambiguous` is true a
 * write may have applied: retry with the same requestId to get that grant back; otherwise it expires
 * with its lease.
 */
export class StoreUnavailableError extends LockError {
  override readonly name = 'StoreUnavailableError';
  readonly retryable = true;
  readonly context: { operation: string; statusCode?: number; ambiguous?: boolean };
  constructor(message: string, details: { operation: string; statusCode?: number; ambiguous?: boolean } & ErrorCause) {
    super(message, details);
    const { cause: _, ...context } = details;
    this.context = context;
  }
}

/** Elasticsearch refused a request in a way retrying will not fix (mapping, missing index, permissions). */
export class StoreRejectedError extends LockError {
  override readonly name = 'StoreRejectedError';
  readonly retryable = false;
  readonly context: { operation: string; statusCode?: number; reason?: string };
  constructor(message: string, details: { operation: string; statusCode?: number; reason?: string } & ErrorCause) {
    super(message, details);
    const { cause: _, ...context } = details;
    this.context = context;
  }
}

/**
 * A write of this call may have applied and the engine could not find out, or could not undo it:
 * the call may hold keys until their lease ends. Retry with the same `requestId` (the retry takes
 * over whatever this call left, under a new lease and a larger fencing token); without a requestId
 * the keys stay blocked until the lease ends (`mayHoldUntil`).
 */
export class LockOutcomeUnknownError extends LockError {
  override readonly name = 'LockOutcomeUnknownError';
  readonly retryable = true;
  readonly context: { operation: string; requestId?: string; mayHoldUntil?: number };
  constructor(message: string, details: { operation: string; requestId?: string; mayHoldUntil?: number } & ErrorCause) {
    super(message, details);
    const { cause: _, ...context } = details;
    this.context = context;
  }
}

/**
 * The lock index's (primary term, seq_no) left the range a fencing token can encode exactly. No
 * grant is made with an inexact token; create a new lock index (and reset the tokens stored downstream).
 */
export class FencingRangeError extends LockError {
  override readonly name = 'FencingRangeError';
  readonly retryable = false;
  readonly context: { primaryTerm: number; seqNo: number };
  constructor(message: string, details: { primaryTerm: number; seqNo: number } & ErrorCause) {
    super(message, details);
    const { cause: _, ...context } = details;
    this.context = context;
  }
}

/** Too many writers raced on the same lock documents for this call to finish its writes; retry. */
export class LockContentionError extends LockError {
  override readonly name = 'LockContentionError';
  readonly retryable = true;
  readonly keys: string[];
  readonly rounds: number;
  constructor(message: string | undefined, details: { keys: string[]; rounds: number } & ErrorCause) {
    super(message ?? `Gave up after ${details.rounds} rounds of concurrent updates on ${details.keys.join(', ')}`, details);
    this.keys = details.keys;
    this.rounds = details.rounds;
  }
}

/**
 * A write to a fenced resource carried a fencing token older than one the resource has already
 * seen: a later holder of the lock wrote first, so this holder's lease was taken over. Nothing was written.
 */
export class StaleFencingTokenError extends LockError {
  override readonly name = 'StaleFencingTokenError';
  readonly retryable = false;
  readonly context: { index: string; id: string; fencingToken: string };
  constructor(message: string | undefined, details: { index: string; id: string; fencingToken: string } & ErrorCause) {
    super(message ?? `${details.index}/${details.id} was written under a newer fencing token than ${details.fencingToken}: this lease was taken over`, details);
    const { cause: _, ...context } = details;
    this.context = context;
  }
}

/**
 * A queued waiter was not served before its ticket ran out (its `queueTtlMs`): told on its wake
 * channel. It holds nothing and is no longer in the queue.
 */
export class LockWaitExpiredError extends LockError {
  override readonly name = 'LockWaitExpiredError';
  readonly retryable = true;
  readonly ticket: string;
  constructor(message: string | undefined, details: { ticket: string; key: string } & ErrorCause) {
    super(message ?? `Ticket ${details.ticket} for ${details.key} ran out before the lock was reserved for it; nothing is held`, details);
    this.ticket = details.ticket;
  }
}
