/** Elasticsearch client errors as domain errors. */
import { errors } from '@elastic/elasticsearch';
import { StoreRejectedError, StoreUnavailableError } from '../core/errors.js';

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

export function translateError(error: unknown, operation: string): Error {
  if (error instanceof StoreUnavailableError || error instanceof StoreRejectedError) return error;
  if (error instanceof errors.ConnectionError || error instanceof errors.TimeoutError || error instanceof errors.NoLivingConnectionsError) {
    return new StoreUnavailableError(`Elasticsearch is unreachable during ${operation}: ${error.message}`, { operation }, { cause: error });
  }
  if (error instanceof errors.ResponseError) {
    const statusCode = error.statusCode ?? 0;
    const reason = (error.body as { error?: { type?: string; reason?: string } } | undefined)?.error;
    if (RETRYABLE_STATUS.has(statusCode)) {
      return new StoreUnavailableError(`Elasticsearch answered ${statusCode} during ${operation}`, { operation, statusCode }, { cause: error });
    }
    return new StoreRejectedError(
      `Elasticsearch refused ${operation}: ${statusCode} ${reason?.type ?? ''} ${reason?.reason ?? ''}`.trim(),
      { operation, statusCode, ...(reason?.type ? { reason: reason.type } : {}) },
      { cause: error },
    );
  }
  if (error instanceof errors.ProductNotSupportedError || error instanceof errors.ElasticsearchClientError) {
    return new StoreRejectedError(`Elasticsearch client error during ${operation}: ${error.message}`, { operation }, { cause: error });
  }
  return error instanceof Error ? error : new Error(String(error));
}
