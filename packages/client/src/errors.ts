/**
 * The service's errors as classes, one per name of the wire catalogue (ERRORS in wire.ts), so that
 * callers can write `catch (e) { if (e instanceof LockHeldError) ... }` whatever the transport.
 * Status and retryability come from the catalogue; an error's fields live in its `body` (the wire
 * body it came as), and a class only says how it reads the ones its name carries.
 *
 * One constructor shape for all: `new LockHeldError({ conflicts, retryAfterMs }, message?, { status, cause })`.
 * The client's own errors, which never come from the service, are in local-errors.ts.
 */
import { type ConflictBody, ERRORS, type ErrorBody, type ErrorName, type FieldIssueBody, isErrorName, unnamedErrorSpec } from './wire.js';

/** What a class constructor takes besides the message: the error body's other fields. */
export type ErrorDetails = { [Field in keyof ErrorBody as Exclude<Field, 'error' | 'message'>]?: ErrorBody[Field] };

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
    // A name this client does not know (gateways answer 502/503/504 with none): the body's word, else the status's.
    const spec = isErrorName(name)
      ? ERRORS[name]
      : unnamedErrorSpec(options.status ?? 500, typeof details.retryable === 'boolean' ? details.retryable : undefined);
    this.status = spec.status;
    this.retryable = spec.retryable;
    this.body = { ...details, error: name as ErrorName, message };
  }

  /** Retryable and on the service's side (5xx): worth repeating at once with backoff, unlike a held lock or a quota. */
  get transient(): boolean {
    return this.retryable && this.status >= 500;
  }
}

/** How a class reads each field its name carries from the body (which leaves out what is empty). */
type Readers = Record<string, (body: ErrorBody) => unknown>;

/** The class of a catalogue name: the constructor every such class takes, and its fields as read-only properties. */
type NamedClass<Fields extends Readers> = new (
  details?: ErrorDetails,
  message?: string,
  options?: ErrorOptions,
) => LockServiceError & { readonly [Field in keyof Fields]: ReturnType<Fields[Field]> };

/**
 * The base of the class of a catalogue name. Its `fields` are getters that read the body on each
 * access, the body being where they live; they are defined at run time, so the overloads type them.
 */
function named(name: ErrorName): NamedClass<Record<never, never>>;
function named<Fields extends Readers>(name: ErrorName, fields: Fields): NamedClass<Fields>;
function named(name: ErrorName, fields: Readers = {}): NamedClass<Record<never, never>> {
  class Named extends LockServiceError {
    constructor(details: ErrorDetails = {}, message?: string, options: ErrorOptions = {}) {
      super(name, details, message, options);
    }
  }
  for (const [field, read] of Object.entries(fields)) {
    Object.defineProperty(Named.prototype, field, {
      get(this: LockServiceError) {
        return read(this.body);
      },
      configurable: true,
    });
  }
  return Named;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const count = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

/** Bad input: nothing was read or written. */
export class ValidationError extends named('ValidationError', {
  fields: (body): FieldIssueBody[] => body.fields ?? [],
}) {}

/** The caller may not do this in this namespace. */
export class AccessDeniedError extends named('AccessDeniedError') {}

/** A limit on held locks would be exceeded; nothing was taken. */
export class QuotaExceededError extends named('QuotaExceededError', {
  retryAfterMs: (body): number | undefined => body.retryAfterMs,
}) {}

/** An incompatible holder has a key; this call holds nothing. */
export class LockHeldError extends named('LockHeldError', {
  conflicts: (body): ConflictBody[] => body.conflicts ?? [],
  /** When trying again may succeed (the holders' lease ends, bounded by the service). */
  retryAfterMs: (body): number => body.retryAfterMs ?? 1_000,
  /** How long the service waited (the acquire's waitMs) before refusing. */
  waitedMs: (body): number => body.waitedMs ?? 0,
}) {}

/** The key is a semaphore of another limit, or a plain lock and a semaphore met on it (a limit of null: a plain lock); nothing is held. */
export class PermitLimitMismatchError extends named('PermitLimitMismatchError', {
  key: (body): string | undefined => text(body.key),
  requestedLimit: (body): number | null => count(body.requestedLimit) ?? null,
  heldLimit: (body): number | null => count(body.heldLimit) ?? null,
}) {}

/** The lock's queue is full: this waiter did not join, nothing was written. Retryable after `retryAfterMs`. */
export class QueueFullError extends named('QueueFullError', {
  key: (body): string | undefined => text(body.key),
  /** The queue's limit (the service's queue.maxTickets). */
  limit: (body): number | undefined => count(body.limit),
  /** Live tickets in the queue when it refused. */
  queued: (body): number | undefined => count(body.queued),
  retryAfterMs: (body): number => body.retryAfterMs ?? 1_000,
}) {}

/** The lease exists but the token's secret does not match it. */
export class LeaseTokenMismatchError extends named('LeaseTokenMismatchError') {}

/** The lease is gone (released, or expired and taken over or swept), or ran out by the caller's clock. */
export class LeaseLostError extends named('LeaseLostError', {
  lostKeys: (body): string[] => body.lostKeys ?? [],
}) {}

/** A queued waiter's ticket ran out before the lock was reserved for it, its reservation lapsed unclaimed (told on its wake channel), or an operator drained it (told on its wake channel, or as the answer of a call that waited). It holds nothing. */
export class LockWaitExpiredError extends named('LockWaitExpiredError') {}

/** The work an idempotency key names is being done by another delivery; this call holds nothing. Try later. */
export class WorkInProgressError extends named('WorkInProgressError') {}

/**
 * The work an idempotency key names was completed, or is in progress, for another payload (Powertools
 * calls it IdempotencyValidationError): nothing was written, nothing is held, the work did not run.
 */
export class WorkPayloadMismatchError extends named('WorkPayloadMismatchError', {
  keyHash: (body): string | undefined => text(body.keyHash),
  /** What holds the key: `completed` (a record) or `in_progress` (a claim whose lease has not ended). */
  found: (body): 'completed' | 'in_progress' | undefined => (body.found === 'completed' || body.found === 'in_progress' ? body.found : undefined),
  /** The first characters of the payload hash stored with the work, and of this call's. */
  storedPayloadHash: (body): string | undefined => text(body.storedPayloadHash),
  payloadHash: (body): string | undefined => text(body.payloadHash),
}) {}

/** A write of this call may have applied (or no answer came back): retry with the same requestId. */
export class LockOutcomeUnknownError extends named('LockOutcomeUnknownError', {
  requestId: (body): string | undefined => body.requestId,
  /** Until when the keys may stay held if nobody retries (epoch ms). */
  mayHoldUntil: (body): number | undefined => {
    const until = body.mayHoldUntil === undefined ? Number.NaN : Date.parse(body.mayHoldUntil);
    return Number.isNaN(until) ? undefined : until;
  },
}) {}

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

type ErrorClass = NamedClass<Record<never, never>>;

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
  WorkPayloadMismatchError,
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
