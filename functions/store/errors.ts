/** Elasticsearch client errors as domain errors. */
import { errors } from '@elastic/elasticsearch';
import { StoreRejectedError, StoreUnavailableError } from '../core/errors.js';

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

/**
 * Writes never create the lock index (fencing tokens would restart at zero in an index with the
 * wrong settings), so a missing one is an operator's job, said plainly.
 */
export function missingLockIndex(index: string, operation: string): StoreRejectedError {
  return new StoreRejectedError(
    `The lock index "${index}" does not exist (or is not an alias of a lock index). Create it with \`npm run index:create\` (LOCK_INDEX=${index}) or ensureLockIndex(); the functions never create it implicitly, so that fencing tokens cannot silently restart.`,
    { operation, statusCode: 404, reason: 'index_not_found_exception' },
  );
}

export const isIndexNotFound = (type: string | undefined): boolean => type === 'index_not_found_exception';

/** Failures after which a write may have applied: the request may have reached Elasticsearch. */
function mayHaveApplied(error: unknown): boolean {
  if (error instanceof errors.TimeoutError) return true;
  if (error instanceof errors.ConnectionError) return !/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH/.test(error.message);
  if (error instanceof errors.ResponseError) return ![429, 503].includes(error.statusCode ?? 0);
  return false;
}

/**
 * @param lockIndex the lock index, to name it when it is missing
 * @param write whether the failed request carried writes: then `ambiguous` says whether they may have applied
 */
export function translateError(error: unknown, operation: string, lockIndex?: string, write = false): Error {
  if (error instanceof StoreUnavailableError || error instanceof StoreRejectedError) return error;
  if (error instanceof errors.ConnectionError || error instanceof errors.TimeoutError || error instanceof errors.NoLivingConnectionsError) {
    return new StoreUnavailableError(`Elasticsearch is unreachable during ${operation}: ${error.message}`, {
      operation,
      ...(write && mayHaveApplied(error) ? { ambiguous: true } : {}),
      cause: error,
    });
  }
  if (error instanceof errors.ResponseError) {
    const statusCode = error.statusCode ?? 0;
    const reason = (error.body as { error?: { type?: string; reason?: string } } | undefined)?.error;
    if (lockIndex !== undefined && statusCode === 404 && isIndexNotFound(reason?.type)) return missingLockIndex(lockIndex, operation);
    if (RETRYABLE_STATUS.has(statusCode)) {
      return new StoreUnavailableError(`Elasticsearch answered ${statusCode} during ${operation}`, {
        operation,
        statusCode,
        ...(write && mayHaveApplied(error) ? { ambiguous: true } : {}),
        cause: error,
      });
    }
    return new StoreRejectedError(`Elasticsearch refused ${operation}: ${statusCode} ${reason?.type ?? ''} ${reason?.reason ?? ''}`.trim(), {
      operation,
      statusCode,
      ...(reason?.type ? { reason: reason.type } : {}),
      cause: error,
    });
  }
  if (error instanceof errors.ProductNotSupportedError || error instanceof errors.ElasticsearchClientError) {
    return new StoreRejectedError(`Elasticsearch client error during ${operation}: ${error.message}`, { operation, cause: error });
  }
  return error instanceof Error ? error : new Error(String(error));
}
