/** In-process and HTTP clients of the lock service. */
export { withLock, type LeaseContext, type Locker, type WithLockOptions } from './with-lock.js';
export { LockHttpClient, type AcquireBody, type GrantBody, type InspectQuery, type ListQuery, type LockHttpClientOptions, type LockStateBody, type ReleaseBody, type RenewalBody } from './http-client.js';
export { errorFromResponse, LockServiceError } from './errors.js';
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
