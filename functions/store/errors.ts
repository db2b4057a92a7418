/**
 * Elasticsearch client errors as domain errors. They are recognised by what they carry (`name`,
 * status, body), never by class: a client the caller built from the package's CommonJS entry (a
 * CommonJS Lambda, Jest, a TypeScript build to CommonJS), or from another copy of the package, raises
 * classes of its own, which `instanceof` against this module's import of the ESM entry never matches.
 */
import { StoreRejectedError, StoreUnavailableError } from '../../packages/engine/src/errors.js';

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

/**
 * - `response`: Elasticsearch answered with an error status.
 * - `timeout`, `connection`: the request may or may not have reached Elasticsearch.
 * - `no-connection`: no node was usable, so nothing was sent.
 * - `client`: the client itself failed (configuration, (de)serialisation, product check, abort): nothing to wait out.
 */
export type ClientErrorKind = 'response' | 'timeout' | 'connection' | 'no-connection' | 'client';

const KIND_BY_NAME: Readonly<Record<string, ClientErrorKind>> = {
  ResponseError: 'response',
  TimeoutError: 'timeout',
  ConnectionError: 'connection',
  NoLivingConnectionsError: 'no-connection',
  ProductNotSupportedError: 'client',
  RequestAbortedError: 'client',
  SerializationError: 'client',
  DeserializationError: 'client',
  ConfigurationError: 'client',
  ElasticsearchClientError: 'client',
  OpenSearchClientError: 'client',
  // The signer could not get credentials: nothing was sent, and the role's credentials come back.
  AwsSigv4SignerError: 'no-connection',
};

export function clientErrorKind(error: unknown): ClientErrorKind | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { name } = error as { name?: unknown };
  return typeof name === 'string' && Object.hasOwn(KIND_BY_NAME, name) ? KIND_BY_NAME[name] : undefined;
}

export interface ResponseFailure {
  statusCode: number;
  type?: string;
  reason?: string;
}

/** The status and error Elasticsearch answered with, when `error` is such an answer. */
export function responseFailure(error: unknown): ResponseFailure | undefined {
  if (clientErrorKind(error) !== 'response') return undefined;
  const carried = error as { statusCode?: unknown; body?: unknown; meta?: { statusCode?: unknown; body?: unknown } };
  const statusCode = [carried.statusCode, carried.meta?.statusCode].find((status): status is number => typeof status === 'number') ?? 0;
  const body = (carried.body ?? carried.meta?.body) as { error?: unknown } | undefined;
  const detail = body?.error;
  if (typeof detail === 'string') return { statusCode, reason: detail };
  const { type, reason } = (typeof detail === 'object' && detail !== null ? detail : {}) as { type?: unknown; reason?: unknown };
  return { statusCode, ...(typeof type === 'string' ? { type } : {}), ...(typeof reason === 'string' ? { reason } : {}) };
}

/**
 * A search aimed at a node (`preference=_only_nodes:<node>`) that holds no copy of the shard any more:
 * the node left the cluster, or the copy moved off it. Elasticsearch answers 400, but it is a failover
 * under way, not a bad request.
 */
export function isNoCopyOnNode(error: unknown): boolean {
  const failure = responseFailure(error);
  return failure?.statusCode === 400 && /no data nodes with criteri/.test(failure.reason ?? '');
}

/**
 * Writes never create the lock index (fencing tokens would restart at zero in an index with the
 * wrong settings), so a missing one is an operator's job, said plainly.
 */
export function missingLockIndex(index: string, operation: string): StoreRejectedError {
  return new StoreRejectedError(
    { operation, statusCode: 404, reason: 'index_not_found_exception' },
    `The lock index "${index}" does not exist (or is not an alias of a lock index). Create it with \`npm run index:create\` (LOCK_INDEX=${index}) or ensureLockIndex(); the functions never create it implicitly, so that fencing tokens cannot silently restart.`,
  );
}

export const isIndexNotFound = (type: string | undefined): boolean => type === 'index_not_found_exception';

const messageOf = (error: unknown): string => String((error as { message?: unknown }).message ?? error);

/** A connection that failed before the request went out. */
const NOT_SENT = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH/;

/** Failures after which a write may have applied: the request may have reached Elasticsearch. */
function mayHaveApplied(error: unknown): boolean {
  switch (clientErrorKind(error)) {
    case 'timeout':
      return true;
    case 'connection':
      return !NOT_SENT.test(messageOf(error));
    case 'response':
      return ![429, 503].includes(responseFailure(error)!.statusCode) && !isNoCopyOnNode(error);
    default:
      return false;
  }
}

/**
 * @param lockIndex the lock index, to name it when it is missing
 * @param write whether the failed request carried writes: then `ambiguous` says whether they may have applied
 * @param server the product, to name it in messages
 */
export function translateError(error: unknown, operation: string, lockIndex?: string, write = false, server = 'Elasticsearch'): Error {
  if (error instanceof StoreUnavailableError || error instanceof StoreRejectedError) return error;
  const kind = clientErrorKind(error);
  const ambiguous = write && mayHaveApplied(error) ? { ambiguous: true } : {};
  if (kind === 'timeout' || kind === 'connection' || kind === 'no-connection') {
    return new StoreUnavailableError({ operation, ...ambiguous, cause: error }, `${server} is unreachable during ${operation}: ${messageOf(error)}`);
  }
  const failure = responseFailure(error);
  if (failure) {
    const { statusCode, type, reason } = failure;
    if (lockIndex !== undefined && statusCode === 404 && isIndexNotFound(type)) return missingLockIndex(lockIndex, operation);
    if (isNoCopyOnNode(error)) {
      return new StoreUnavailableError(
        {
          operation,
          statusCode,
          cause: error,
        },
        `The shard copy searched during ${operation} left its node (a failover under way): ${reason}`,
      );
    }
    if (RETRYABLE_STATUS.has(statusCode)) {
      return new StoreUnavailableError({ operation, statusCode, ...ambiguous, cause: error }, `${server} answered ${statusCode} during ${operation}`);
    }
    return new StoreRejectedError(
      {
        operation,
        statusCode,
        ...(type ? { reason: type } : {}),
        cause: error,
      },
      `${server} refused ${operation}: ${statusCode} ${type ?? ''} ${reason ?? ''}`.trim(),
    );
  }
  if (kind === 'client') return new StoreRejectedError({ operation, cause: error }, `${server} client error during ${operation}: ${messageOf(error)}`);
  return error instanceof Error ? error : new Error(String(error));
}
