/**
 * @es-lease-locks/client: locks of the es-lease-locks service from your code.
 *
 *   const locks = new LockClient({ transport: httpTransport({ baseUrl, sigv4: true }) });
 *   await locks.using({ namespace: 'orders', granularity: 'document', ids: ['o-1'], owner: 'me', ttlMs: 10_000 },
 *     async (signal, lock) => write({ fencingToken: lock.fencingToken, signal }),
 *     { remainingTimeMs: () => context.getRemainingTimeInMillis() });
 */

export {
  AccessDeniedError,
  type ErrorDetails,
  type ErrorOptions,
  errorFromBody,
  FencingRangeError,
  InternalError,
  LeaseLostError,
  LeaseTokenMismatchError,
  LockContentionError,
  LockHeldError,
  LockOutcomeUnknownError,
  LockServiceError,
  LockWaitExpiredError,
  lockError,
  PermitLimitMismatchError,
  QueueFullError,
  QuotaExceededError,
  StoreRejectedError,
  StoreUnavailableError,
  ValidationError,
  WorkInProgressError,
  WorkPayloadMismatchError,
} from './errors.js';
export type { EventKeyOptions } from './event-work.js';
export {
  excludeFencedTombstones,
  FENCED_S3_TOKEN_METADATA,
  FENCED_S3_TOMBSTONE_METADATA,
  FENCED_TOKEN_ATTRIBUTE,
  FENCED_TOMBSTONE_FIELD,
  type FencedAttributeValue,
  type FencedBulkItem,
  FencedBulkItemError,
  type FencedBulkItemResult,
  type FencedBulkOp,
  type FencedBulkRequest,
  type FencedBulkResult,
  FencedDocumentExistsError,
  FencedDocumentMissingError,
  type FencedDynamoDBClient,
  type FencedItem,
  type FencedItemResult,
  type FencedItemTarget,
  type FencedObjectResult,
  type FencedObjectTarget,
  FencedOutError,
  type FencedPutObjectInput,
  type FencedRefresh,
  type FencedS3Client,
  type FencedSink,
  type FencedTarget,
  type FencedTombstone,
  type FencedTransportOptions,
  type FencedTransportParams,
  type FencedWriteResult,
  type FencedWritesClient,
  type FencingTokenSource,
  fencedBulk,
  fencedCreate,
  fencedDelete,
  fencedDeleteItem,
  fencedDeleteObject,
  fencedIndex,
  fencedPutItem,
  fencedPutObject,
  fencedUpdate,
  fencedUpdateItem,
  fencingTokenOf,
  isFencedTombstone,
  isFencedTombstoneItem,
  isFencedTombstoneObject,
} from './fenced-writes.js';
export { compareFencingTokens, isNewerFencingToken } from './fencing-token.js';
export { Lock, type LockEvents, type LockState } from './handle.js';
export { InsufficientTimeError } from './local-errors.js';
export { type LocalKey, localKeysOf } from './local-keys.js';
export {
  DEFAULT_LOCAL_LOCK_TABLE_SETTINGS,
  type LocalEnterOptions,
  LocalLockTable,
  type LocalLockTableSettings,
  type LocalLockTableStats,
  type LocalSlot,
} from './local-lock-table.js';
export { type AcquireOptions, LockClient, type LockClientOptions, type OnceOutcome, type UsingOptions, withLock } from './lock-client.js';
export type { CallOptions, Locker } from './locker.js';
export type { RemainingTime } from './remaining-time.js';
export { isTransient } from './retry.js';
export { DEFAULT_SETTINGS, type LockClientSettings, type LockClientSettingsOverrides, type RetrySettings, resolveSettings } from './settings.js';
export { type AwsCredentials, type AwsCredentialsProvider, regionOfHost, type SigV4Options } from './sigv4.js';
export { HttpTransport, type HttpTransportOptions, httpTransport } from './transport-http.js';
export { errorFromFunctionError, InvokeTransport, type InvokeTransportOptions, invokeTransport } from './transport-invoke.js';
export type { HoldingOptions, LockedWork } from './using.js';
export * from './wire.js';
