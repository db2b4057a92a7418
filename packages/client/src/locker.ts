/**
 * What the client needs from a transport: one call per operation, wire bodies in and out. Errors
 * are thrown as the classes of errors.ts (LockHeldError, ...): a transport turns whatever its
 * medium says (an HTTP error body, a Lambda function error, a dropped connection) into one of them.
 *
 * The package ships two (httpTransport, invokeTransport); anything else with these three calls
 * plugs in the same way, e.g. the lock engine in-process (examples/sqs-consumer/engine-locker.ts).
 */
import type {
  AcquireBody,
  CompletedBody,
  GrantBody,
  InspectQuery,
  ListQuery,
  LockStatesBody,
  ReleaseBody,
  ReleaseResultBody,
  RenewalBody,
  RenewBody,
} from './wire.js';

export interface CallOptions {
  /** Aborts the call (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Give up waiting for an answer after this long (ms); the transport's default otherwise. */
  timeoutMs?: number;
}

export interface Locker {
  /** A CompletedBody only for a request with an idempotencyKey whose work was completed. */
  acquire(body: AcquireBody, options?: CallOptions): Promise<GrantBody | CompletedBody>;
  renew(body: RenewBody, options?: CallOptions): Promise<RenewalBody>;
  release(body: ReleaseBody, options?: CallOptions): Promise<ReleaseResultBody>;
  /** Who holds a target's keys now. Optional: in-process adapters may leave it out. */
  inspect?(query: InspectQuery, options?: CallOptions): Promise<LockStatesBody>;
  /** Locks by namespace, owner or path prefix (search: about a second behind). */
  list?(query: ListQuery, options?: CallOptions): Promise<LockStatesBody>;
}
