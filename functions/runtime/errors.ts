/**
 * The one place that turns an error into an answer: an HTTP status and body for API Gateway, or
 * the error a direct invocation throws (its `name` is what a Step Functions Retry/Catch matches).
 */
import {
  AccessDeniedError,
  FencingRangeError,
  LeaseLostError,
  LeaseTokenMismatchError,
  LockContentionError,
  LockError,
  LockHeldError,
  LockOutcomeUnknownError,
  QuotaExceededError,
  StoreRejectedError,
  StoreUnavailableError,
  ValidationError,
} from '../core/index.js';
import { presentConflicts } from './present.js';

export interface ErrorBody {
  error: string;
  message: string;
  [field: string]: unknown;
}

export interface ErrorReply {
  statusCode: number;
  body: ErrorBody;
  headers: Record<string, string>;
  /** Expected refusals are logged at info; store trouble at warn; anything else at error. */
  level: 'info' | 'warn' | 'error';
}

/** The error a direct invocation throws when nothing more specific applies (no internals in the message). */
export class InternalError extends Error {
  override readonly name = 'InternalError';
  readonly retryable = false;
  constructor(correlationId?: string) {
    super(`Internal error${correlationId ? ` (correlation id ${correlationId})` : ''}; the function logs have the details.`);
  }
}

const retryAfterSeconds = (ms: number): string => String(Math.max(1, Math.ceil(ms / 1000)));

export function errorReply(error: unknown, correlationId?: string): ErrorReply {
  if (error instanceof ValidationError) {
    return { statusCode: 400, level: 'info', headers: {}, body: { error: error.name, message: error.message, fields: error.fields } };
  }
  if (error instanceof LockHeldError) {
    return {
      statusCode: 409,
      level: 'info',
      headers: { 'Retry-After': retryAfterSeconds(error.retryAfterMs) },
      body: {
        error: error.name,
        message: error.message,
        retryAfterMs: error.retryAfterMs,
        conflicts: presentConflicts(error.conflicts),
        ...(error.waitedMs > 0 ? { waitedMs: error.waitedMs } : {}),
      },
    };
  }
  if (error instanceof AccessDeniedError) {
    const { reason, action, namespace, principal } = error.context;
    return {
      statusCode: 403,
      level: 'info',
      headers: {},
      body: { error: error.name, message: error.message, reason, action, ...(namespace ? { namespace } : {}), ...(principal ? { principal } : {}) },
    };
  }
  if (error instanceof QuotaExceededError) {
    return { statusCode: 429, level: 'info', headers: {}, body: { error: error.name, message: error.message, retryable: true, quota: { ...error.context } } };
  }
  if (error instanceof LeaseTokenMismatchError) {
    return { statusCode: 403, level: 'info', headers: {}, body: { error: error.name, message: error.message } };
  }
  if (error instanceof LeaseLostError) {
    return { statusCode: 410, level: 'info', headers: {}, body: { error: error.name, message: error.message, lostKeys: error.lostKeys } };
  }
  if (error instanceof LockOutcomeUnknownError) {
    return {
      statusCode: 503,
      level: 'warn',
      headers: { 'Retry-After': '1' },
      body: {
        error: error.name,
        message: error.message,
        retryable: true,
        ...(error.context.requestId ? { requestId: error.context.requestId } : {}),
        ...(error.context.mayHoldUntil ? { mayHoldUntil: new Date(error.context.mayHoldUntil).toISOString() } : {}),
      },
    };
  }
  // Operator errors (the lock index is missing, or its fencing range is spent): say what to do.
  if (error instanceof StoreRejectedError && error.context.reason === 'index_not_found_exception') {
    return { statusCode: 500, level: 'error', headers: {}, body: { error: error.name, message: error.message, retryable: false } };
  }
  if (error instanceof FencingRangeError) {
    return { statusCode: 500, level: 'error', headers: {}, body: { error: error.name, message: error.message, retryable: false } };
  }
  if (error instanceof StoreUnavailableError) {
    const message = error.context.ambiguous
      ? 'The lock store did not answer in time; the operation may have applied. Retry (with the same requestId for acquire).'
      : 'The lock store is unavailable; retry later.';
    return { statusCode: 503, level: 'warn', headers: { 'Retry-After': '1' }, body: { error: error.name, message, retryable: true } };
  }
  if (error instanceof LockContentionError) {
    return { statusCode: 503, level: 'warn', headers: { 'Retry-After': '1' }, body: { error: error.name, message: error.message, retryable: true } };
  }
  const internal = new InternalError(correlationId);
  return { statusCode: 500, level: 'error', headers: {}, body: { error: internal.name, message: internal.message } };
}

/**
 * What a direct invocation throws: the engine's own errors as they are (their names are the
 * contract), anything else as InternalError.
 */
export function invocationError(error: unknown, correlationId?: string): Error {
  if (error instanceof LockError) return error;
  return new InternalError(correlationId);
}

/** The error names a direct invocation can throw (for Step Functions Retry/Catch). */
export const INVOCATION_ERROR_NAMES = [
  'ValidationError',
  'AccessDeniedError',
  'QuotaExceededError',
  'LockHeldError',
  'LeaseLostError',
  'LeaseTokenMismatchError',
  'StoreUnavailableError',
  'StoreRejectedError',
  'LockContentionError',
  'LockOutcomeUnknownError',
  'FencingRangeError',
  'InternalError',
] as const;

export function logLevelOf(error: unknown): ErrorReply['level'] {
  return errorReply(error).level;
}
