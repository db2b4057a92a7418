/**
 * The service's errors as classes, one per name of the wire catalogue (ERRORS in wire.ts), so that
 * callers can write `catch (e) { if (e instanceof LockHeldError) ... }` whatever the transport.
 * Status and retryability come from the catalogue; a class only adds the fields its name carries.
 */
import { type ConflictBody, ERRORS, type ErrorBody, type ErrorName, type FieldIssueBody, isErrorName } from './wire.js';

/** What a class constructor takes besides the message: the error body's other fields. */
export type ErrorDetails = Partial<
  Pick<ErrorBody, 'retryable' | 'fields' | 'conflicts' | 'retryAfterMs' | 'waitedMs' | 'lostKeys' | 'requestId' | 'mayHoldUntil'>
> & {
  [field: string]: unknown;
};

export interface ErrorOptions {
  /** The HTTP status the answer came with (defaults to the catalogue's). */
  status?: number;
  cause?: unknown;
}

/**
 * Every error the service answers. An instance of this class itself (not of a subclass) stands for
 * a name this version of the client does not know; its `name` is still the service's.
 */
export class LockServiceError extends Error {
  override readonly name: string;
  readonly status: number;
  /** Whether repeating the same call (with the same requestId for acquire) can succeed. */
  readonly retryable: boolean;
  /** The error body as the service sent it (or as the client made it up). */
  readonly body: ErrorBody;

  constructor(name: string, message: string | undefined, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    const text = message ?? `${name}`;
    super(text, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = name;
    const spec = isErrorName(name) ? ERRORS[name] : undefined;
    this.status = spec?.status ?? options.status ?? 500;
    // Unknown names: the body's own word, else what the HTTP status says (gateways answer 502/503/504 without a name).
    this.retryable = spec?.retryable ?? (typeof details.retryable === 'boolean' ? details.retryable : [429, 502, 503, 504].includes(this.status));
    this.body = { ...details, error: name as ErrorName, message: text };
  }

  /** Retryable and on the service's side (5xx): worth repeating at once with backoff, unlike a held lock or a quota. */
  get transient(): boolean {
    return this.retryable && this.status >= 500;
  }
}

/** Bad input: nothing was read or written. */
export class ValidationError extends LockServiceError {
  readonly fields: FieldIssueBody[];
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('ValidationError', message, details, options);
    this.fields = details.fields ?? [];
  }
}

/** The caller may not do this in this namespace. */
export class AccessDeniedError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('AccessDeniedError', message, details, options);
  }
}

/** A limit on held locks would be exceeded; nothing was taken. */
export class QuotaExceededError extends LockServiceError {
  readonly retryAfterMs: number | undefined;
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('QuotaExceededError', message, details, options);
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** An incompatible holder has a key; this call holds nothing. */
export class LockHeldError extends LockServiceError {
  readonly conflicts: ConflictBody[];
  /** When trying again may succeed (the holders' lease ends, bounded by the service). */
  readonly retryAfterMs: number;
  /** How long the service waited (the acquire's waitMs) before refusing. */
  readonly waitedMs: number;
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('LockHeldError', message, details, options);
    this.conflicts = details.conflicts ?? [];
    this.retryAfterMs = details.retryAfterMs ?? 1_000;
    this.waitedMs = details.waitedMs ?? 0;
  }
}

/** The key is a semaphore of another limit, or a plain lock and a semaphore met on it (a limit of null: a plain lock); nothing is held. */
export class PermitLimitMismatchError extends LockServiceError {
  readonly key: string | undefined;
  readonly requestedLimit: number | null;
  readonly heldLimit: number | null;
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('PermitLimitMismatchError', message, details, options);
    this.key = typeof details.key === 'string' ? details.key : undefined;
    this.requestedLimit = typeof details.requestedLimit === 'number' ? details.requestedLimit : null;
    this.heldLimit = typeof details.heldLimit === 'number' ? details.heldLimit : null;
  }
}

/** The lock's queue is full: this waiter did not join, nothing was written. Retryable after `retryAfterMs`. */
export class QueueFullError extends LockServiceError {
  readonly key: string | undefined;
  /** The queue's limit (the service's queue.maxTickets). */
  readonly limit: number | undefined;
  /** Live tickets in the queue when it refused. */
  readonly queued: number | undefined;
  readonly retryAfterMs: number;
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('QueueFullError', message, details, options);
    this.key = typeof details.key === 'string' ? details.key : undefined;
    this.limit = typeof details.limit === 'number' ? details.limit : undefined;
    this.queued = typeof details.queued === 'number' ? details.queued : undefined;
    this.retryAfterMs = details.retryAfterMs ?? 1_000;
  }
}

/** The lease exists but the token's secret does not match it. */
export class LeaseTokenMismatchError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('LeaseTokenMismatchError', message, details, options);
  }
}

/** The lease is gone (released, or expired and taken over or swept), or ran out by the caller's clock. */
export class LeaseLostError extends LockServiceError {
  readonly lostKeys: string[];
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('LeaseLostError', message, details, options);
    this.lostKeys = details.lostKeys ?? [];
  }
}

/** A queued waiter's ticket ran out before the lock was reserved for it, or its reservation lapsed unclaimed (told on its wake channel). It holds nothing. */
export class LockWaitExpiredError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('LockWaitExpiredError', message, details, options);
  }
}

/** The work an idempotency key names is being done by another delivery; this call holds nothing. Try later. */
export class WorkInProgressError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('WorkInProgressError', message, details, options);
  }
}

/** A write of this call may have applied (or no answer came back): retry with the same requestId. */
export class LockOutcomeUnknownError extends LockServiceError {
  readonly requestId: string | undefined;
  /** Until when the keys may stay held if nobody retries (epoch ms). */
  readonly mayHoldUntil: number | undefined;
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('LockOutcomeUnknownError', message, details, options);
    this.requestId = details.requestId;
    const until = details.mayHoldUntil === undefined ? Number.NaN : Date.parse(details.mayHoldUntil);
    this.mayHoldUntil = Number.isNaN(until) ? undefined : until;
  }
}

/** The lock store could not be reached, timed out or pushed back. */
export class StoreUnavailableError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('StoreUnavailableError', message, details, options);
  }
}

/** Too many writers raced on the same lock documents. */
export class LockContentionError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('LockContentionError', message, details, options);
  }
}

/** The lock store refused in a way retrying will not fix (a missing lock index, permissions). */
export class StoreRejectedError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('StoreRejectedError', message, details, options);
  }
}

/** The lock index's fencing range is spent. */
export class FencingRangeError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('FencingRangeError', message, details, options);
  }
}

/** Anything else on the service's side; its logs have the details under the correlation id. */
export class InternalError extends LockServiceError {
  constructor(message?: string, details: ErrorDetails = {}, options: ErrorOptions = {}) {
    super('InternalError', message, details, options);
  }
}

type ErrorClass = new (message?: string, details?: ErrorDetails, options?: ErrorOptions) => LockServiceError;

/** A class for every name of the catalogue: a name added there without a class here does not compile. */
const CLASSES: { readonly [Name in ErrorName]: ErrorClass } = {
  ValidationError,
  AccessDeniedError,
  QuotaExceededError,
  LockHeldError,
  PermitLimitMismatchError,
  QueueFullError,
  LeaseTokenMismatchError,
  LeaseLostError,
  LockWaitExpiredError,
  WorkInProgressError,
  LockOutcomeUnknownError,
  StoreUnavailableError,
  LockContentionError,
  StoreRejectedError,
  FencingRangeError,
  InternalError,
};

/**
 * The error an error body stands for: the class of its name, or LockServiceError for a name this
 * client does not know (or none: `HTTP <status>`).
 */
export function errorFromBody(body: unknown, options: ErrorOptions = {}): LockServiceError {
  const parsed = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Partial<ErrorBody>;
  const { error: name, message, ...details } = parsed;
  const text = typeof message === 'string' ? message : undefined;
  if (isErrorName(name)) return new CLASSES[name](text, details, options);
  const fallback = typeof name === 'string' && name !== '' ? name : `HTTP${options.status ?? 500}`;
  return new LockServiceError(fallback, text ?? fallback, details, options);
}

/** A new error of a catalogue name, made on the client's side (a lost answer, a lease run out by the local clock). */
export function lockError(name: ErrorName, message: string, details: ErrorDetails = {}, options: ErrorOptions = {}): LockServiceError {
  return new CLASSES[name](message, details, options);
}

/**
 * Refused by the client before any request: the Lambda function's remaining time (minus what the
 * release and the answer need) is too short for the shortest lease the service grants.
 */
export class InsufficientTimeError extends Error {
  override readonly name = 'InsufficientTimeError';
  readonly retryable = false;
  constructor(
    message: string,
    /** What was left for the lease, in ms. */
    readonly availableMs: number,
    /** The shortest lease worth asking for, in ms. */
    readonly neededMs: number,
  ) {
    super(message);
  }
}

/**
 * A fenced write (fenced-writes.ts) refused because the document already carries a newer fencing
 * token: a later holder of the lock wrote it (or deleted it, leaving a tombstone), so this holder
 * lost the lock at some point and its write must not land. Not retryable with this token.
 */
export class FencedOutError extends Error {
  override readonly name = 'FencedOutError';
  readonly retryable = false;
  readonly index: string;
  readonly id: string;
  /** This write's token. */
  readonly fencingToken: string;
  /** The newer token the document carries, when the server's refusal (or the read before the write) told it. */
  readonly currentToken: string | undefined;

  constructor(details: { index: string; id: string; fencingToken: string; currentToken?: string | undefined }, options: { cause?: unknown } = {}) {
    const newer = details.currentToken === undefined ? 'a newer fencing token' : `fencing token ${details.currentToken}`;
    super(
      `Fenced out: ${details.index}/${details.id} already carries ${newer}, newer than this write's ${details.fencingToken}; a later holder of the lock wrote it, so this write was refused`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.index = details.index;
    this.id = details.id;
    this.fencingToken = details.fencingToken;
    this.currentToken = details.currentToken;
  }
}
