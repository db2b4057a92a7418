/** In-process and HTTP clients of the lock service. */

export {
  FencingRangeError,
  LeaseLostError,
  LeaseTokenMismatchError,
  LockContentionError,
  LockError,
  LockHeldError,
  LockOutcomeUnknownError,
  StoreRejectedError,
  StoreUnavailableError,
  ValidationError,
} from '../core/errors.js';
export { errorFromResponse, LockServiceError } from './errors.js';
export {
  type AcquireBody,
  type GrantBody,
  type InspectQuery,
  type ListQuery,
  LockHttpClient,
  type LockHttpClientOptions,
  type LockStateBody,
  type ReleaseBody,
  type RenewalBody,
} from './http-client.js';
export {
  DEFAULT_LOCAL_LOCK_TABLE_SETTINGS,
  type LocalEnterOptions,
  type LocalKey,
  LocalLockTable,
  type LocalLockTableSettings,
  type LocalLockTableStats,
  type LocalSlot,
  localKeysOf,
} from './local-lock-table.js';
export { type LeaseContext, type Locker, type WithLockOptions, withLock } from './with-lock.js';
