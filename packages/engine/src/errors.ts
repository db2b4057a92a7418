/**
 * Every error the lock engine can raise. Handlers map these by `name` (HTTP status, or the error
 * name a Step Functions `Retry`/`Catch` matches), so names are part of the public contract.
 *
 * Status, retryability, metric and log level are the wire catalogue's (ERRORS; LOCAL_ERRORS for a
 * name that never crosses the wire); a class adds only its own fields, kept in `context`, and how they
 * read on the wire (`toWire`). One constructor shape for all: `(fields, message?)`, where `fields`
 * may carry a `cause`; a message left out is written from the fields.
 */
import {
  type ConflictBody,
  type ErrorBody,
  type ErrorName,
  type FieldIssueBody,
  hashPrefix,
  isErrorName,
  type LocalErrorName,
  retryableOf,
} from '../../client/src/wire.js';
import type { ConflictingKey } from './model.js';

/** A request field and the rule it broke: as the wire says it. */
export type FieldIssue = FieldIssueBody;

export interface ErrorCause {
  cause?: unknown;
}

/** The fields an error is raised with, besides an optional cause. */
type Raised<Fields> = Fields & ErrorCause;

export abstract class LockError<Fields extends object = object> extends Error {
  /** Whether repeating the same call later can succeed: the catalogue's word for this name. */
  declare readonly retryable: boolean;
  /** The error's own fields, as raised (its cause aside): the one place they live. */
  readonly context: Readonly<Fields>;

  constructor(raised: Raised<Fields>, message: string) {
    const { cause, ...fields } = raised;
    super(message, cause === undefined ? undefined : { cause });
    // Own and enumerable like a plain field (loggers list an error's own fields), read once the subclass has set the name.
    Object.defineProperty(this, 'retryable', { get: () => retryableOf(this.name), enumerable: true });
    this.context = fields as Fields;
  }

  /** The error body an answer carries: name, message and retryability, then the error's own wire fields. */
  toWire(): ErrorBody {
    const error = isErrorName(this.name) ? this.name : 'InternalError';
    return { error, message: this.wireMessage(), retryable: this.retryable, ...this.wireFields() };
  }

  /** The message a caller reads (by default the error's own). */
  protected wireMessage(): string {
    return this.message;
  }

  /** What the body carries besides name, message and retryability. */
  protected wireFields(): Partial<ErrorBody> {
    return {};
  }
}

/** The class of an engine error: raised as `new X(fields, message?)`, with the `Exposed` fields as read-only properties. */
type LockErrorClass<Fields extends object, Exposed extends keyof Fields> = new (
  raised: Raised<Fields>,
  message?: string,
) => LockError<Fields> & { readonly [Field in Exposed]: Fields[Field] };

/**
 * The base of the class of the engine error `name` (one of the wire catalogue's, or of its local
 * errors'): `describe` writes the message from the fields when the raiser gives none, and the
 * `exposed` fields also read as the error's own properties, getters over `context` where they live.
 * The getters are defined at run time, so the overload types them.
 */
export function lockErrorClass<Fields extends object, Exposed extends keyof Fields = never>(
  name: ErrorName | LocalErrorName,
  describe: (fields: Fields) => string,
  ...exposed: Exposed[]
): LockErrorClass<Fields, Exposed>;
export function lockErrorClass<Fields extends object>(
  name: ErrorName | LocalErrorName,
  describe: (fields: Fields) => string,
  ...exposed: Array<keyof Fields>
): LockErrorClass<Fields, never> {
  class Named extends LockError<Fields> {
    override readonly name: string = name;
    constructor(raised: Raised<Fields>, message?: string) {
      super(raised, message ?? describe(raised));
    }
  }
  for (const field of exposed) {
    Object.defineProperty(Named.prototype, field, {
      get(this: LockError<Fields>) {
        return this.context[field];
      },
      configurable: true,
    });
  }
  return Named;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Conflicts as the wire says them (times as ISO strings and epoch ms). */
export function presentConflicts(conflicts: ConflictingKey[]): ConflictBody[] {
  return conflicts.map((conflict) => ({
    key: conflict.key,
    granularity: conflict.granularity,
    requestedMode: conflict.requestedMode,
    holders: conflict.holders.map((holder) => ({ owner: holder.owner, mode: holder.mode, expiresAt: iso(holder.expiresAt), expiresAtMs: holder.expiresAt })),
    ...(conflict.reason ? { reason: conflict.reason } : {}),
    ...(conflict.permits ? { permits: { ...conflict.permits } } : {}),
  }));
}

/** Bad input. Nothing was read or written. */
export class ValidationError extends lockErrorClass(
  'ValidationError',
  ({ fields }: { fields: FieldIssue[] }) => `Invalid request: ${fields.map((issue) => `${issue.field}: ${issue.message}`).join('; ')}`,
  'fields',
) {
  protected override wireFields(): Partial<ErrorBody> {
    return { fields: this.fields };
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

interface AccessDenied {
  action: string;
  reason: AccessDeniedReason;
  namespace?: string;
  principal?: string;
}

/**
 * The namespace policy does not let this caller do this in this namespace, or does not know the
 * caller. Nothing was read or written.
 */
export class AccessDeniedError extends lockErrorClass(
  'AccessDeniedError',
  ({ action, reason, namespace, principal }: AccessDenied) =>
    `${principal ?? 'the caller'} may not ${action}${namespace ? ` in namespace ${namespace}` : ''} (${reason})`,
) {
  protected override wireFields(): Partial<ErrorBody> {
    const { reason, action, namespace, principal } = this.context;
    return { reason, action, ...(namespace ? { namespace } : {}), ...(principal ? { principal } : {}) };
  }
}

interface Quota {
  per: 'owner' | 'namespace';
  subject: string;
  limit: number;
  held: number;
  requested: number;
}

/**
 * A configured limit on live locks (per owner, or per namespace) would be exceeded: nothing was
 * taken. The count behind it comes from search, about a second behind, so the limit is a guard rail
 * that can be passed by a few concurrent calls, never a safety property.
 */
export class QuotaExceededError extends lockErrorClass(
  'QuotaExceededError',
  ({ per, subject, limit, held, requested }: Quota) =>
    `Quota exceeded: ${per} ${subject} holds ${held} live lock${held === 1 ? '' : 's'} (limit ${limit} per ${per}); this call asks for ${requested} more`,
) {
  protected override wireFields(): Partial<ErrorBody> {
    return { quota: { ...this.context } };
  }
}

interface Held {
  conflicts: ConflictingKey[];
  /** A suggested delay before trying again. */
  retryAfterMs: number;
  /** How long the call waited (`waitMs`) before giving up; 0 (or left out) when it did not wait. */
  waitedMs?: number;
}

const describeHeld = ({ conflicts }: Held): string =>
  `Lock held: ${conflicts
    .map((conflict) => {
      const holders = conflict.holders.map((holder) => `${holder.mode} by ${holder.owner}`).join(', ');
      return `${conflict.key} (${conflict.permits ? `${conflict.permits.taken} of ${conflict.permits.limit} permits taken: ` : ''}${holders})`;
    })
    .join('; ')}`;

/** Someone else holds an incompatible lock on at least one key; this call holds nothing. */
export class LockHeldError extends lockErrorClass('LockHeldError', describeHeld, 'conflicts', 'retryAfterMs') {
  get waitedMs(): number {
    return this.context.waitedMs ?? 0;
  }
  protected override wireFields(): Partial<ErrorBody> {
    return { retryAfterMs: this.retryAfterMs, conflicts: presentConflicts(this.conflicts), ...(this.waitedMs > 0 ? { waitedMs: this.waitedMs } : {}) };
  }
}

interface LimitMismatch {
  key: string;
  requestedLimit: number | null;
  heldLimit: number | null;
}

const describeMismatch = ({ key, requestedLimit, heldLimit }: LimitMismatch): string => {
  const asked = requestedLimit === null ? 'a plain lock' : `permits of a limit of ${requestedLimit}`;
  const held = heldLimit === null ? 'held as a plain lock' : `a semaphore with a limit of ${heldLimit} permits`;
  return `${key} is ${held}; this acquire asks for ${asked}`;
};

/**
 * The document is in use in another way than this acquire asks: a semaphore with another limit
 * (every acquire of one semaphore gives the same `permits.limit`), a semaphore asked for as a plain
 * lock, or a plain lock asked for with permits. A limit of null stands for a plain lock. Nothing is
 * held; waiting would not help while the document is in use (docs/permits.md).
 */
export class PermitLimitMismatchError extends lockErrorClass('PermitLimitMismatchError', describeMismatch, 'key', 'requestedLimit', 'heldLimit') {
  protected override wireFields(): Partial<ErrorBody> {
    return { ...this.context };
  }
}

interface QueueFull {
  key: string;
  limit: number;
  queued: number;
  /** A suggested delay before trying again. */
  retryAfterMs: number;
}

/**
 * The lock's queue already holds `limit` live tickets (settings queue.maxTickets): this waiter did not
 * join, and nothing was written. A waiter already in the queue is never refused. Try again once
 * waiters ahead have been served.
 */
export class QueueFullError extends lockErrorClass(
  'QueueFullError',
  ({ key, limit }: QueueFull) => `the queue of lock ${key} is full (${limit} tickets, queue.maxTickets); nothing was written`,
  'key',
  'limit',
  'queued',
  'retryAfterMs',
) {
  protected override wireFields(): Partial<ErrorBody> {
    return { ...this.context };
  }
}

/** The lease this token names is gone: released, or expired and taken over or swept. */
export class LeaseLostError extends lockErrorClass(
  'LeaseLostError',
  ({ leaseId, lostKeys }: { leaseId: string; lostKeys: string[] }) => `Lease ${leaseId} is no longer held on ${lostKeys.join(', ')}`,
  'leaseId',
  'lostKeys',
) {
  protected override wireFields(): Partial<ErrorBody> {
    return { lostKeys: this.lostKeys };
  }
}

interface InProgress {
  keyHash: string;
  owner?: string;
  since?: number;
  retryAfterMs: number;
}

/**
 * The work an idempotency key names is being done by another delivery (its lease holds the lock, or
 * may still): this call holds nothing. Try again later: it then gets the recorded result, or takes
 * the work on if that delivery failed or died.
 */
export class WorkInProgressError extends lockErrorClass(
  'WorkInProgressError',
  ({ keyHash, owner }: InProgress) => `The work ${keyHash} is in progress${owner ? ` (taken on by ${owner})` : ''}; nothing is held`,
) {
  protected override wireFields(): Partial<ErrorBody> {
    const { keyHash, owner, retryAfterMs } = this.context;
    return { keyHash, ...(owner ? { owner } : {}), retryAfterMs };
  }
}

interface PayloadMismatch {
  keyHash: string;
  /** What holds the key: a completed record, or a claim whose lease has not ended. */
  found: 'completed' | 'in_progress';
  /** The payload hash stored with it, and the one this call gave. */
  storedPayloadHash: string;
  payloadHash: string;
}

/**
 * The work an idempotency key names was completed, or is in progress, for another payload: this
 * call's payload hash differs from the one stored with the record or the claim. Nothing was written
 * and nothing is held; the recorded result is not given to a call of another payload. The answer
 * carries the first characters of both hashes only.
 */
export class WorkPayloadMismatchError extends lockErrorClass(
  'WorkPayloadMismatchError',
  ({ keyHash, found, storedPayloadHash, payloadHash }: PayloadMismatch) =>
    `The work ${keyHash} is ${found === 'completed' ? 'completed' : 'in progress'} for another payload (hash ${hashPrefix(storedPayloadHash)}…, this call's ${hashPrefix(payloadHash)}…); nothing is held`,
  'keyHash',
  'found',
) {
  protected override wireFields(): Partial<ErrorBody> {
    const { keyHash, found, storedPayloadHash, payloadHash } = this.context;
    return { keyHash, found, storedPayloadHash: hashPrefix(storedPayloadHash), payloadHash: hashPrefix(payloadHash) };
  }
}

/** The lease exists but the token's secret does not match it. Nothing was changed. */
export class LeaseTokenMismatchError extends lockErrorClass(
  'LeaseTokenMismatchError',
  ({ leaseId }: { leaseId: string }) => `The token does not own lease ${leaseId}`,
  'leaseId',
) {}

interface Unavailable {
  operation: string;
  statusCode?: number;
  ambiguous?: boolean;
}

/**
 * Elasticsearch could not be reached, timed out or pushed back (429/5xx). When `ambiguous` is true a
 * write may have applied: retry with the same requestId to get that grant back; otherwise it expires
 * with its lease.
 */
export class StoreUnavailableError extends lockErrorClass(
  'StoreUnavailableError',
  ({ operation }: Unavailable) => `The lock store is unavailable during ${operation}`,
) {
  // The store's own words stay in the logs; the caller is told what to do.
  protected override wireMessage(): string {
    return this.context.ambiguous
      ? 'The lock store did not answer in time; the operation may have applied. Retry (with the same requestId for acquire).'
      : 'The lock store is unavailable; retry later.';
  }
}

/** Elasticsearch refused a request in a way retrying will not fix (mapping, missing index, permissions). */
export class StoreRejectedError extends lockErrorClass(
  'StoreRejectedError',
  ({ operation }: { operation: string; statusCode?: number; reason?: string }) => `The lock store refused ${operation}`,
) {}

interface OutcomeUnknown {
  operation: string;
  requestId?: string;
  mayHoldUntil?: number;
}

/**
 * A write of this call may have applied and the engine could not find out, or could not undo it:
 * the call may hold keys until their lease ends. Retry with the same `requestId` (the retry takes
 * over whatever this call left, under a new lease and a larger fencing token); without a requestId
 * the keys stay blocked until the lease ends (`mayHoldUntil`).
 */
export class LockOutcomeUnknownError extends lockErrorClass(
  'LockOutcomeUnknownError',
  ({ operation }: OutcomeUnknown) => `The outcome of ${operation} is unknown; it may hold keys until their lease ends`,
) {
  protected override wireFields(): Partial<ErrorBody> {
    const { requestId, mayHoldUntil } = this.context;
    return { ...(requestId ? { requestId } : {}), ...(mayHoldUntil ? { mayHoldUntil: iso(mayHoldUntil) } : {}) };
  }
}

/**
 * The lock index's (primary term, seq_no) left the range a fencing token can encode exactly. No
 * grant is made with an inexact token; create a new lock index (and reset the tokens stored downstream).
 */
export class FencingRangeError extends lockErrorClass(
  'FencingRangeError',
  ({ primaryTerm, seqNo }: { primaryTerm: number; seqNo: number }) => `primary term ${primaryTerm}, seq_no ${seqNo} leave the fencing range`,
) {}

/** Too many writers raced on the same lock documents for this call to finish its writes; retry. */
export class LockContentionError extends lockErrorClass(
  'LockContentionError',
  ({ keys, rounds }: { keys: string[]; rounds: number }) => `Gave up after ${rounds} rounds of concurrent updates on ${keys.join(', ')}`,
  'keys',
  'rounds',
) {}

/**
 * A write to a fenced resource (store/fenced-document.ts) carried a fencing token older than one the
 * resource has already seen: a later holder of the lock wrote first, so this holder's lease was taken
 * over. Nothing was written. Raised to the writer in its own process, never answered by the service:
 * a local error of the catalogue (LOCAL_ERRORS), like the client's FencedOutError; should one escape a
 * handler, it answers as an InternalError.
 */
export class StaleFencingTokenError extends lockErrorClass(
  'StaleFencingTokenError',
  ({ index, id, fencingToken }: { index: string; id: string; fencingToken: string }) =>
    `${index}/${id} was written under a newer fencing token than ${fencingToken}: this lease was taken over`,
) {}

/**
 * A queued waiter was not served before its ticket ran out (its `queueTtlMs`), or an operator's drain
 * took it out: told on its wake channel, or, a waiter in the call, as its call's answer. It holds
 * nothing and is no longer in the queue.
 */
export class LockWaitExpiredError extends lockErrorClass(
  'LockWaitExpiredError',
  ({ ticket, key }: { ticket: string; key: string }) => `Ticket ${ticket} for ${key} ran out before the lock was reserved for it; nothing is held`,
  'ticket',
) {}
