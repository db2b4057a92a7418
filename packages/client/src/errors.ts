/**
 * The service's errors as classes, one per name of the wire catalogue (ERRORS in wire.ts), so that
 * callers can write `catch (e) { if (e instanceof LockHeldError) ... }` whatever the transport.
 * Status and retryability come from the catalogue; an error's fields live in its `body` (the wire
 * body it came as), and a class only reads the ones its name carries.
 *
 * One constructor shape for all: `new LockHeldError({ conflicts, retryAfterMs }, message?, { status, cause })`.
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
  /** The error body as the service sent it (or as the client made it up): the error's fields. */
  readonly body: ErrorBody;

  constructor(name: string, details: ErrorDetails = {}, message: string = name, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = name;
    const spec = isErrorName(name) ? ERRORS[name] : undefined;
    this.status = spec?.status ?? options.status ?? 500;
    // Unknown names: the body's own word, else what the HTTP status says (gateways answer 502/503/504 without a name).
    this.retryable = spec?.retryable ?? (typeof details.retryable === 'boolean' ? details.retryable : [429, 502, 503, 504].includes(this.status));
    this.body = { ...details, error: name as ErrorName, message };
  }

  /** Retryable and on the service's side (5xx): worth repeating at once with backoff, unlike a held lock or a quota. */
  get transient(): boolean {
    return this.retryable && this.status >= 500;
  }
}

/** The base of the class of a catalogue name: the constructor every such class takes. */
function named(name: ErrorName) {
  return class extends LockServiceError {
    constructor(details: ErrorDetails = {}, message?: string, options: ErrorOptions = {}) {
      super(name, details, message, options);
    }
  };
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const count = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

/** Bad input: nothing was read or written. */
export class ValidationError extends named('ValidationError') {
  get fields(): FieldIssueBody[] {
    return this.body.fields ?? [];
  }
}

/** The caller may not do this in this namespace. */
export class AccessDeniedError extends named('AccessDeniedError') {}

/** A limit on held locks would be exceeded; nothing was taken. */
export class QuotaExceededError extends named('QuotaExceededError') {
  get retryAfterMs(): number | undefined {
    return this.body.retryAfterMs;
  }
}

/** An incompatible holder has a key; this call holds nothing. */
export class LockHeldError extends named('LockHeldError') {
  get conflicts(): ConflictBody[] {
    return this.body.conflicts ?? [];
  }
  /** When trying again may succeed (the holders' lease ends, bounded by the service). */
  get retryAfterMs(): number {
    return this.body.retryAfterMs ?? 1_000;
  }
  /** How long the service waited (the acquire's waitMs) before refusing. */
  get waitedMs(): number {
    return this.body.waitedMs ?? 0;
  }
}

/** The key is a semaphore of another limit, or a plain lock and a semaphore met on it (a limit of null: a plain lock); nothing is held. */
export class PermitLimitMismatchError extends named('PermitLimitMismatchError') {
  get key(): string | undefined {
    return text(this.body.key);
  }
  get requestedLimit(): number | null {
    return count(this.body.requestedLimit) ?? null;
  }
  get heldLimit(): number | null {
    return count(this.body.heldLimit) ?? null;
  }
}

/** The lock's queue is full: this waiter did not join, nothing was written. Retryable after `retryAfterMs`. */
export class QueueFullError extends named('QueueFullError') {
  get key(): string | undefined {
    return text(this.body.key);
  }
  /** The queue's limit (the service's queue.maxTickets). */
  get limit(): number | undefined {
    return count(this.body.limit);
  }
  /** Live tickets in the queue when it refused. */
  get queued(): number | undefined {
    return count(this.body.queued);
  }
  get retryAfterMs(): number {
    return this.body.retryAfterMs ?? 1_000;
  }
}

/** The lease exists but the token's secret does not match it. */
export class LeaseTokenMismatchError extends named('LeaseTokenMismatchError') {}

/** The lease is gone (released, or expired and taken over or swept), or ran out by the caller's clock. */
export class LeaseLostError extends named('LeaseLostError') {
  get lostKeys(): string[] {
    return this.body.lostKeys ?? [];
  }
}

/** A queued waiter's ticket ran out before the lock was reserved for it, or its reservation lapsed unclaimed (told on its wake channel). It holds nothing. */
export class LockWaitExpiredError extends named('LockWaitExpiredError') {}

/** The work an idempotency key names is being done by another delivery; this call holds nothing. Try later. */
export class WorkInProgressError extends named('WorkInProgressError') {}

/** A write of this call may have applied (or no answer came back): retry with the same requestId. */
export class LockOutcomeUnknownError extends named('LockOutcomeUnknownError') {
  get requestId(): string | undefined {
    return this.body.requestId;
  }
  /** Until when the keys may stay held if nobody retries (epoch ms). */
  get mayHoldUntil(): number | undefined {
    const until = this.body.mayHoldUntil === undefined ? Number.NaN : Date.parse(this.body.mayHoldUntil);
    return Number.isNaN(until) ? undefined : until;
  }
}

/** The lock store could not be reached, timed out or pushed back. */
export class StoreUnavailableError extends named('StoreUnavailableError') {}

/** Too many writers raced on the same lock documents. */
export class LockContentionError extends named('LockContentionError') {}

/** The lock store refused in a way retrying will not fix (a missing lock index, permissions). */
export class StoreRejectedError extends named('StoreRejectedError') {}

/** The lock index's fencing range is spent. */
export class FencingRangeError extends named('FencingRangeError') {}

/** Anything else on the service's side; its logs have the details under the correlation id. */
export class InternalError extends named('InternalError') {}

type ErrorClass = ReturnType<typeof named>;

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
  if (isErrorName(name)) return new CLASSES[name](details, text(message), options);
  const fallback = typeof name === 'string' && name !== '' ? name : `HTTP${options.status ?? 500}`;
  return new LockServiceError(fallback, details, text(message) ?? fallback, options);
}

/** A new error of a catalogue name, made on the client's side (a lost answer, a lease run out by the local clock). */
export function lockError(name: ErrorName, message: string, details: ErrorDetails = {}, options: ErrorOptions = {}): LockServiceError {
  return new CLASSES[name](details, message, options);
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
