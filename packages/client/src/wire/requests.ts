/** What a caller sends: the bodies of acquire, renew, release and sweep, and the queries of inspect and list. */
import type { Granularity, LockMode, TargetBody } from './granularities.js';

/** A semaphore's share: `count` of `limit` permits. */
export interface PermitsBody {
  limit: number;
  /** Default 1. */
  count?: number;
}

/** POST /acquire, or a direct invocation of acquire. */
export interface AcquireBody extends TargetBody {
  /** Default `exclusive`. */
  mode?: LockMode;
  owner: string;
  /** Lease length; the server's default when left out. */
  ttlMs?: number;
  /**
   * How long the call may wait for a held lock before it answers LockHeldError; default 0. A single
   * key waits in the lock's queue and is served in arrival order.
   */
  waitMs?: number;
  /** Names one logical call: a retry with the same requestId gets that call's grant back, never a second one. */
  requestId?: string;
  /**
   * A semaphore ("at most `limit` at a time"): take `count` (default 1) of the target's `limit`
   * permits. A document target with one id, or a tree path; exclusive mode. Every acquire of one
   * semaphore gives the same limit (else PermitLimitMismatchError). The grant is a lease like any
   * other: renew and release it with its leaseToken.
   */
  permits?: PermitsBody;
  /**
   * Wait in the lock's queue, not in the call (single key, waitMs 0, with a requestId): the call
   * answers at once, `status: 'queued'`. When the lock is reserved for the ticket, the channel gets
   * `status: 'ready'`; the waiter then claims it with the same acquire (target, mode, owner,
   * requestId) without `wake`, and that answer is the grant. A wake-up is a hint, never a grant.
   */
  wake?: { taskToken?: string; queueUrl?: string; eventBusName?: string };
  /** How long a `wake` waiter's ticket may wait in the queue; the server's default (5 minutes) when left out. */
  queueTtlMs?: number;
  /**
   * Run the work once (exclusive mode): names it (`true`: by the requestId). When it was completed,
   * the answer is `status: 'completed'` with the recorded result and nothing is held; while another
   * delivery has it, WorkInProgressError. Otherwise the grant takes the work on: release it with `record`.
   */
  idempotencyKey?: string | true;
  /**
   * With an idempotencyKey: the hash of the payload the work is for (1–128 characters of
   * `[A-Za-z0-9_=+/-]`; the client sends payloadHashOf, SHA-256 of its canonical JSON). A
   * redelivery of the key with another payload, while the work is completed or in progress, is
   * refused with WorkPayloadMismatchError and nothing is written.
   */
  payloadHash?: string;
  /**
   * Name the work by its event instead (the service reads it as the client does, wire/event-path.ts):
   * the key is the string or number at `eventKeyPath` (`detail.orderId`, `Records[0].messageId`),
   * the payload hash that of the whole event, or of its part at `payloadPath`. No key there: the call
   * takes the lock without the work and its grant says so (`missingKeyPath`), or, with
   * `throwOnNoKey`, ValidationError (`eventKeyPath:no_key`). At most 256 KiB of JSON (`event:too_large`).
   */
  event?: unknown;
  eventKeyPath?: string;
  payloadPath?: string;
  throwOnNoKey?: boolean;
}

export interface RenewBody {
  leaseToken: string;
  ttlMs?: number;
}

export interface ReleaseBody {
  leaseToken: string;
  /**
   * A lease acquired with an idempotencyKey: the outcome to record before the release. Only while the
   * lease still holds the lock (else LeaseLostError, and the lease is released without a record).
   * `completed` answers later calls with `result` (JSON, 32 KiB at most: record a reference to a
   * larger one) until `ttlMs` (default one day); `failed` lets the next delivery run the work again.
   */
  record?: { status: 'completed' | 'failed'; result?: unknown; ttlMs?: number };
}

/** GET /inspect: who holds a target's keys now (realtime). */
export interface InspectQuery extends TargetBody {
  mode?: LockMode;
}

/** GET /locks: locks by namespace, owner or path prefix (search: about a second behind). */
export interface ListQuery {
  namespace?: string;
  granularity?: Granularity;
  owner?: string;
  pathPrefix?: string;
  limit?: number;
  includeExpired?: boolean;
}

export interface SweepBody {
  batchSize?: number;
  maxBatches?: number;
}
