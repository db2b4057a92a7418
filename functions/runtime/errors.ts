/**
 * The one place that turns an error into an answer: an HTTP status and body for API Gateway, or
 * the error a direct invocation throws (its `name` is what a Step Functions Retry/Catch matches).
 * Status, retryability, metric and log level come from the wire contract's catalogue (ERRORS);
 * this module adds only what each error carries besides its message.
 */
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { ERROR_NAMES, ERRORS, type ErrorBody, type ErrorName, type ErrorSpec, isErrorName } from '../../packages/client/src/wire.js';
import {
  AccessDeniedError,
  LeaseLostError,
  LockError,
  LockHeldError,
  LockOutcomeUnknownError,
  PermitLimitMismatchError,
  QueueFullError,
  QuotaExceededError,
  StoreRejectedError,
  StoreUnavailableError,
  ValidationError,
  WorkInProgressError,
} from '../core/index.js';
import { presentConflicts } from './present.js';

export type { ErrorBody } from '../../packages/client/src/wire.js';

export interface ErrorReply {
  statusCode: number;
  body: ErrorBody;
  headers: Record<string, string>;
  level: ErrorSpec['level'];
}

/** The error a direct invocation throws when nothing more specific applies (no internals in the message). */
export class InternalError extends Error {
  override readonly name = 'InternalError';
  readonly retryable = false;
  constructor(correlationId?: string) {
    super(`Internal error${correlationId ? ` (correlation id ${correlationId})` : ''}; the function logs have the details.`);
  }
}

/** The error names a direct invocation can throw (for Step Functions Retry/Catch): the catalogue's. */
export const INVOCATION_ERROR_NAMES: readonly ErrorName[] = ERROR_NAMES;

/**
 * The catalogue name an error answers as. A lock store that refused for a reason the caller can act
 * on (the lock index is missing) says so; any other refusal, and anything unexpected, is an
 * InternalError whose details stay in the logs.
 */
function nameOf(error: unknown): ErrorName {
  if (!(error instanceof LockError) || !isErrorName(error.name)) return 'InternalError';
  if (error instanceof StoreRejectedError && error.context.reason !== 'index_not_found_exception') return 'InternalError';
  return error.name;
}

const retryAfterSeconds = (ms: number): string => String(Math.max(1, Math.ceil(ms / 1000)));

/** What an error carries besides its name and message, and the headers that go with it. */
function detailsOf(error: unknown): { fields: Partial<ErrorBody>; headers: Record<string, string>; message?: string } {
  if (error instanceof ValidationError) return { fields: { fields: error.fields }, headers: {} };
  if (error instanceof PermitLimitMismatchError) {
    return { fields: { key: error.key, requestedLimit: error.requestedLimit, heldLimit: error.heldLimit }, headers: {} };
  }
  if (error instanceof LockHeldError) {
    return {
      headers: { 'Retry-After': retryAfterSeconds(error.retryAfterMs) },
      fields: { retryAfterMs: error.retryAfterMs, conflicts: presentConflicts(error.conflicts), ...(error.waitedMs > 0 ? { waitedMs: error.waitedMs } : {}) },
    };
  }
  if (error instanceof QueueFullError) {
    const { key, limit, queued, retryAfterMs } = error;
    return { fields: { key, limit, queued, retryAfterMs }, headers: { 'Retry-After': retryAfterSeconds(retryAfterMs) } };
  }
  if (error instanceof LeaseLostError) return { fields: { lostKeys: error.lostKeys }, headers: {} };
  if (error instanceof WorkInProgressError) {
    const { keyHash, owner, retryAfterMs } = error.context;
    return { fields: { keyHash, ...(owner ? { owner } : {}), retryAfterMs }, headers: { 'Retry-After': retryAfterSeconds(retryAfterMs) } };
  }
  if (error instanceof AccessDeniedError) {
    const { reason, action, namespace, principal } = error.context;
    return { fields: { reason, action, ...(namespace ? { namespace } : {}), ...(principal ? { principal } : {}) }, headers: {} };
  }
  if (error instanceof QuotaExceededError) return { fields: { quota: { ...error.context } }, headers: {} };
  if (error instanceof LockOutcomeUnknownError) {
    return {
      headers: {},
      fields: {
        ...(error.context.requestId ? { requestId: error.context.requestId } : {}),
        ...(error.context.mayHoldUntil ? { mayHoldUntil: new Date(error.context.mayHoldUntil).toISOString() } : {}),
      },
    };
  }
  if (error instanceof StoreUnavailableError) {
    const message = error.context.ambiguous
      ? 'The lock store did not answer in time; the operation may have applied. Retry (with the same requestId for acquire).'
      : 'The lock store is unavailable; retry later.';
    return { fields: {}, headers: {}, message };
  }
  const retryAfterMs = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  if (typeof retryAfterMs === 'number') return { fields: { retryAfterMs }, headers: { 'Retry-After': retryAfterSeconds(retryAfterMs) } };
  return { fields: {}, headers: {} };
}

export function errorReply(error: unknown, correlationId?: string): ErrorReply {
  const name = nameOf(error);
  const spec = ERRORS[name];
  if (name === 'InternalError') {
    const internal = new InternalError(correlationId);
    return { statusCode: spec.status, level: spec.level, headers: {}, body: { error: name, message: internal.message, retryable: spec.retryable } };
  }
  const details = detailsOf(error);
  // A retryable store answer says when: a second is enough for a failover to be noticed or a race to pass.
  const headers = spec.retryable && spec.status === 503 ? { 'Retry-After': '1', ...details.headers } : details.headers;
  return {
    statusCode: spec.status,
    level: spec.level,
    headers,
    body: { error: name, message: details.message ?? (error as Error).message, retryable: spec.retryable, ...details.fields },
  };
}

/** Counts a refusal or failure in its catalogue metric. */
export function failureMetric(metrics: Metrics, error: unknown): void {
  metrics.addMetric(ERRORS[nameOf(error)].metric, MetricUnit.Count, 1);
}

/**
 * What a direct invocation throws: the engine's own errors as they are (their names are the
 * contract), anything else as InternalError.
 */
export function invocationError(error: unknown, correlationId?: string): Error {
  return nameOf(error) === 'InternalError' ? new InternalError(correlationId) : (error as Error);
}
