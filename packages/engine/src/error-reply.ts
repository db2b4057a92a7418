/**
 * The one place that turns an error into an answer: an HTTP status, headers and body, which a
 * direct invocation and the in-memory Locker of the client's testing entry answer alike. Status,
 * retryability and log level come from the wire contract's catalogue (ERRORS); each error renders
 * its own body (LockError.toWire); this module adds the headers.
 */
import { ERROR_NAMES, ERRORS, type ErrorBody, type ErrorName, type ErrorSpec, isErrorName } from '../../client/src/wire.js';
import { LockError, lockErrorClass, StoreRejectedError } from './errors.js';

export type { ErrorBody } from '../../client/src/wire.js';

export interface ErrorReply {
  statusCode: number;
  body: ErrorBody;
  headers: Record<string, string>;
  level: ErrorSpec['level'];
}

/** The error a direct invocation throws when nothing more specific applies (no internals in the message). */
export class InternalError extends lockErrorClass(
  'InternalError',
  ({ correlationId }: { correlationId?: string }) =>
    `Internal error${correlationId ? ` (correlation id ${correlationId})` : ''}; the function logs have the details.`,
) {
  constructor(correlationId?: string) {
    super(correlationId ? { correlationId } : {});
  }
}

/** The error names a direct invocation can throw (for Step Functions Retry/Catch): the catalogue's. */
export const INVOCATION_ERROR_NAMES: readonly ErrorName[] = ERROR_NAMES;

/**
 * The catalogue name an error answers as. A lock store that refused for a reason the caller can act
 * on (the lock index is missing) says so; any other refusal, and anything unexpected, is an
 * InternalError whose details stay in the logs.
 */
export function answeredName(error: unknown): ErrorName {
  if (!(error instanceof LockError) || !isErrorName(error.name)) return 'InternalError';
  if (error instanceof StoreRejectedError && error.context.reason !== 'index_not_found_exception') return 'InternalError';
  return error.name;
}

const retryAfterSeconds = (ms: number): string => String(Math.max(1, Math.ceil(ms / 1000)));

export function errorReply(error: unknown, correlationId?: string): ErrorReply {
  const name = answeredName(error);
  const spec = ERRORS[name];
  if (name === 'InternalError') return { statusCode: spec.status, level: spec.level, headers: {}, body: new InternalError(correlationId).toWire() };
  const body = (error as LockError).toWire();
  const headers: Record<string, string> = typeof body.retryAfterMs === 'number' ? { 'Retry-After': retryAfterSeconds(body.retryAfterMs) } : {};
  // A retryable store answer says when: a second is enough for a failover to be noticed or a race to pass.
  if (spec.retryable && spec.status === 503) headers['Retry-After'] ??= '1';
  return { statusCode: spec.status, level: spec.level, headers, body };
}

/**
 * What a direct invocation throws: the engine's own errors as they are (their names are the
 * contract), anything else as InternalError.
 */
export function invocationError(error: unknown, correlationId?: string): Error {
  return answeredName(error) === 'InternalError' ? new InternalError(correlationId) : (error as Error);
}
