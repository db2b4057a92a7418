/**
 * What the client needs from a transport: one call per operation, wire bodies in and out. Errors
 * are thrown as the classes of errors.ts (LockHeldError, ...): a transport turns whatever its
 * medium says (an HTTP error body, a Lambda function error, a dropped connection) into one of them.
 *
 * The package ships two (httpTransport, invokeTransport); anything else with these three calls
 * plugs in the same way, e.g. the lock engine in-process (packages/engine/src/locker.ts).
 */
import type { Operations } from './wire.js';

export interface CallOptions {
  /** Aborts the call (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Give up waiting for an answer after this long (ms); the transport's default otherwise. */
  timeoutMs?: number;
}

/** Each call takes its operation's request and answers its answer, as the wire contract types them (Operations). */
export interface Locker {
  /** A CompletedBody only for a request with an idempotencyKey whose work was completed. */
  acquire(body: Operations['acquire']['request'], options?: CallOptions): Promise<Operations['acquire']['answer']>;
  renew(body: Operations['renew']['request'], options?: CallOptions): Promise<Operations['renew']['answer']>;
  release(body: Operations['release']['request'], options?: CallOptions): Promise<Operations['release']['answer']>;
  /** Who holds a target's keys now. Optional: in-process adapters may leave it out. */
  inspect?(query: Operations['inspect']['request'], options?: CallOptions): Promise<Operations['inspect']['answer']>;
  /** Locks by namespace, owner or path prefix (search: about a second behind). */
  list?(query: Operations['list']['request'], options?: CallOptions): Promise<Operations['list']['answer']>;
}
