/**
 * Every error the lock engine can raise. Handlers map these by `name` (HTTP status, or the error
 * name a Step Functions `Retry`/`Catch` matches), so names are part of the public contract.
 */
import type { ConflictingKey } from './model.js';

export interface FieldIssue {
  /** Dotted path of the offending request field, e.g. `ids.3` or `path`. */
  field: string;
  /** Short machine-readable rule name, e.g. `too_long`, `absolute_path`. */
  rule: string;
  message: string;
}

export abstract class LockError extends Error {
  /** Whether repeating the same call later can succeed. */
  abstract readonly retryable: boolean;
}

/** Bad input. Nothing was read or written. */
export class ValidationError extends LockError {
  override readonly name = 'ValidationError';
  readonly retryable = false;
  constructor(readonly fields: FieldIssue[]) {
    super(`Invalid request: ${fields.map((issue) => `${issue.field}: ${issue.message}`).join('; ')}`);
  }
}

/** Someone else holds an incompatible lock on at least one key; this call holds nothing. */
export class LockHeldError extends LockError {
  override readonly name = 'LockHeldError';
  readonly retryable = true;
  constructor(
    readonly conflicts: ConflictingKey[],
    /** A suggested delay before trying again. */
    readonly retryAfterMs: number,
    options?: { cause?: unknown; waitedMs?: number },
  ) {
    super(
      `Lock held: ${conflicts
        .map((conflict) => `${conflict.key} (${conflict.holders.map((h) => `${h.mode} by ${h.owner}`).join(', ')})`)
        .join('; ')}`,
      { cause: options?.cause },
    );
    this.waitedMs = options?.waitedMs ?? 0;
  }
  readonly waitedMs: number;
}

/** The lease this token names is gone: released, or expired and taken over or swept. */
export class LeaseLostError extends LockError {
  override readonly name = 'LeaseLostError';
  readonly retryable = false;
  constructor(
    readonly leaseId: string,
    readonly lostKeys: string[],
  ) {
    super(`Lease ${leaseId} is no longer held on ${lostKeys.join(', ')}`);
  }
}

/** The lease exists but the token's secret does not match it. Nothing was changed. */
export class LeaseTokenMismatchError extends LockError {
  override readonly name = 'LeaseTokenMismatchError';
  readonly retryable = false;
  constructor(readonly leaseId: string) {
    super(`The token does not own lease ${leaseId}`);
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
  constructor(
    message: string,
    readonly context: { operation: string; statusCode?: number; ambiguous?: boolean },
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Elasticsearch refused a request in a way retrying will not fix (mapping, missing index, permissions). */
export class StoreRejectedError extends LockError {
  override readonly name = 'StoreRejectedError';
  readonly retryable = false;
  constructor(
    message: string,
    readonly context: { operation: string; statusCode?: number; reason?: string },
    options?: { cause?: unknown },
  ) {
    super(message, options);
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
  constructor(
    message: string,
    readonly context: { operation: string; requestId?: string; mayHoldUntil?: number },
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * The lock index's (primary term, seq_no) left the range a fencing token can encode exactly. No
 * grant is made with an inexact token; create a new lock index (and reset the tokens stored downstream).
 */
export class FencingRangeError extends LockError {
  override readonly name = 'FencingRangeError';
  readonly retryable = false;
  constructor(
    message: string,
    readonly context: { primaryTerm: number; seqNo: number },
  ) {
    super(message);
  }
}

/** Too many writers raced on the same lock documents for this call to finish its writes; retry. */
export class LockContentionError extends LockError {
  override readonly name = 'LockContentionError';
  readonly retryable = true;
  constructor(
    readonly keys: string[],
    readonly rounds: number,
  ) {
    super(`Gave up after ${rounds} rounds of concurrent updates on ${keys.join(', ')}`);
  }
}
