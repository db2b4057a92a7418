/**
 * The client: `acquire` gives a Lock handle, `using` runs work under a lock that renews itself and
 * is released at the end. Each call is one logical call with one requestId (the caller's, or one
 * made up once here): its retries carry the same one, so an acquire whose first answer was lost
 * gets that grant back (`reused: true`) and never a second lock.
 */
import { randomUUID } from 'node:crypto';
import { LeaseLostError } from './errors.js';
import { type EventKeyOptions, nameWorkByEvent } from './event-work.js';
import { Lock, type LockEvents } from './handle.js';
import type { LocalLockTable, LocalSlot } from './local-lock-table.js';
import type { CallOptions, Locker } from './locker.js';
import { fitAcquire, type RemainingTime } from './remaining-time.js';
import { withRetries } from './retry.js';
import { type LockClientSettings, type LockClientSettingsOverrides, resolveSettings } from './settings.js';
import { type HoldingOptions, type LockedWork, runHolding } from './using.js';
import type { AcquireBody, CompletedBody, InspectQuery, ListQuery, LockStateBody } from './wire.js';

export interface LockClientOptions {
  /** How calls reach the service: httpTransport, invokeTransport, or your own Locker. */
  transport: Locker;
  settings?: LockClientSettingsOverrides;
  /**
   * Callers of this process that want conflicting locks queue here first, and only the first in line
   * asks the service (keep one client, or one table, at module scope). The wait counts against `waitMs`.
   * Acquires with `permits` (a semaphore) skip it.
   */
  localTable?: LocalLockTable;
  /** The default of every call's `remainingTimeMs`. */
  remainingTimeMs?: RemainingTime;
}

export interface AcquireOptions extends LockEvents, EventKeyOptions {
  /** Aborting it stops waiting and retrying (the promise rejects with its reason). */
  signal?: AbortSignal;
  /** Renew in the background at `renewFraction` of the TTL until released. Default: false for acquire, true for using. */
  autoRenew?: boolean;
  /**
   * The Lambda function's remaining time (`context.getRemainingTimeInMillis`): no lease is asked
   * past it (less `deadlineReserveMs`); too little left refuses with InsufficientTimeError before any request.
   */
  remainingTimeMs?: RemainingTime;
  /** Called before each retry of a transient failure. */
  onRetry?: (error: unknown, attempt: number) => void;
}

export interface UsingOptions extends AcquireOptions, HoldingOptions {
  /**
   * With an `idempotencyKey` in the request: how long the service keeps the recorded result (ms; the
   * service's default, one day, when left out). A later call with the same key gets it back
   * instead of running the work.
   */
  recordTtlMs?: number;
  /** With an `idempotencyKey`: called when the work had been completed already and was not run (the record as the service answered it). */
  onCompleted?: (record: CompletedBody) => void;
}

/**
 * What an acquire with an idempotency key gives: a lock that has taken the work on, or the record of
 * the work done already. `missingKeyPath`: the event had no key there, so the lock took no work on
 * (release it without a record).
 */
export type OnceOutcome = { lock: Lock; missingKeyPath?: string; completed?: never } | { completed: CompletedBody; lock?: never; missingKeyPath?: never };

const now = (): number => performance.now();

export class LockClient {
  readonly transport: Locker;
  readonly settings: Readonly<LockClientSettings>;
  readonly localTable: LocalLockTable | undefined;
  private readonly remainingTimeMs: RemainingTime | undefined;

  constructor(options: LockClientOptions | Locker) {
    const resolved: LockClientOptions = 'transport' in options ? options : { transport: options };
    this.transport = resolved.transport;
    this.settings = resolveSettings(resolved.settings);
    this.localTable = resolved.localTable;
    this.remainingTimeMs = resolved.remainingTimeMs;
  }

  /**
   * Takes the lock (waiting up to the request's `waitMs`) and returns its handle. Transient failures
   * are retried with the same requestId. Release the handle when done.
   */
  async acquire(request: AcquireBody, options: AcquireOptions = {}): Promise<Lock> {
    const outcome = await this.acquireOnce(request, options);
    if (outcome.completed) {
      throw new TypeError(`the work of this idempotencyKey was completed already (recorded ${outcome.completed.recordedAt}): call acquireOnce or using`);
    }
    return outcome.lock;
  }

  /**
   * An acquire that may name its work with an `idempotencyKey`: the lock (which has taken the work
   * on: release it with `record`), or, when the work was completed already, its record and no lock.
   * WorkInProgressError while another delivery has the work; WorkPayloadMismatchError when it was
   * completed, or is in progress, for another payload. The key and the payload may come from the
   * event (`event`, `eventKeyPath`, `payloadPath`: EventKeyOptions).
   */
  async acquireOnce(given: AcquireBody, options: AcquireOptions = {}): Promise<OnceOutcome> {
    const { signal } = options;
    signal?.throwIfAborted();
    // Bad event options are refused before anything is queued or sent.
    const { request, missingKeyPath } = nameWorkByEvent(given, options);
    const remaining = options.remainingTimeMs ?? this.remainingTimeMs;
    // Refused before it queues or sends anything; the wait, local queue included, ends in time for the shortest lease.
    const waitBudget = remaining ? fitAcquire({ ttlMs: request.ttlMs, waitMs: request.waitMs }, remaining, this.settings).waitMs : request.waitMs;
    const requestId = request.requestId ?? randomUUID();
    const startedAt = now();
    // A semaphore's holders share its key, which the local table (by mode) would give one caller of this process at a time: permits go straight to the service.
    const local = request.permits ? undefined : this.localTable;
    const slot: LocalSlot | undefined = await local?.enter(request, {
      ...(waitBudget !== undefined ? { waitMs: waitBudget } : {}),
      ...(signal ? { signal } : {}),
    });
    try {
      let sentAt = 0;
      const answer = await withRetries(
        () => {
          // What the local queue and earlier attempts left of the wait goes to the service.
          const waitMs = waitBudget === undefined ? undefined : Math.max(0, Math.floor(startedAt + waitBudget - now()));
          const fitted = remaining ? fitAcquire({ ttlMs: request.ttlMs, waitMs }, remaining, this.settings) : { waitMs };
          sentAt = now();
          return this.transport.acquire({ ...request, ...definedOnly(fitted), requestId }, signal ? { signal } : {});
        },
        { retry: this.settings.retry, ...(signal ? { signal } : {}), ...(options.onRetry ? { onRetry: options.onRetry } : {}) },
      );
      if ('status' in answer) {
        slot?.release();
        return { completed: answer };
      }
      const grant = answer;
      const lock = new Lock({
        transport: this.transport,
        settings: this.settings,
        grant,
        sentAt,
        receivedAt: now(),
        // Without a TTL of its own, a lease cut for the remaining time renews towards the service's default, not the cut one.
        renewTtlMs: request.ttlMs ?? (remaining ? this.settings.defaultTtlMs : grant.ttlMs),
        remainingTimeMs: remaining,
        autoRenew: options.autoRenew ?? false,
        slot,
        ...(options.onRenew ? { onRenew: options.onRenew } : {}),
        ...(options.onLost ? { onLost: options.onLost } : {}),
      });
      // Never hand out a lock that is already over: an answer that came after the lease's local end
      // (a slow answer, a paused process), or a caller that gave up while the acquire was in flight.
      if (now() >= lock.lossAt || signal?.aborted) {
        await lock.release().catch(() => {});
        signal?.throwIfAborted();
        throw new LeaseLostError({}, 'The grant arrived after its lease had run out by the local clock; it was released');
      }
      return { lock, ...(missingKeyPath !== undefined ? { missingKeyPath } : {}) };
    } catch (error) {
      slot?.release();
      throw error;
    }
  }

  /**
   * Runs `work` under the lock: acquires, renews in the background, releases at the end whatever
   * happens. If the lock was lost before `work` returned, rejects with the loss even if `work`
   * resolved: what it did was not protected to the end.
   */
  async using<T>(request: AcquireBody, work: LockedWork<T>, options: UsingOptions = {}): Promise<T> {
    const outcome = await this.acquireOnce(request, { ...options, autoRenew: options.autoRenew ?? true });
    if (outcome.completed) {
      options.onCompleted?.(outcome.completed);
      return outcome.completed.result as T;
    }
    // With an idempotency key (the request's, or the event's) the release records the outcome: the result (JSON), or `failed` when the work threw.
    const tookWorkOn = (request.idempotencyKey !== undefined || options.eventKeyPath !== undefined) && outcome.missingKeyPath === undefined;
    const record = !tookWorkOn ? undefined : options.recordTtlMs === undefined ? {} : { ttlMs: options.recordTtlMs };
    return runHolding(outcome.lock, work, { ...options, ...(record ? { record } : {}) });
  }

  /** Who holds a target's keys now (realtime). */
  async inspect(query: InspectQuery, options: CallOptions = {}): Promise<LockStateBody[]> {
    const inspect = this.transport.inspect?.bind(this.transport);
    if (!inspect) throw new TypeError('this transport has no inspect');
    return (await withRetries(() => inspect(query, options), { retry: this.settings.retry })).locks;
  }

  /** Locks by namespace, owner or path prefix (search: about a second behind). */
  async list(query: ListQuery = {}, options: CallOptions = {}): Promise<LockStateBody[]> {
    const list = this.transport.list?.bind(this.transport);
    if (!list) throw new TypeError('this transport has no list');
    return (await withRetries(() => list(query, options), { retry: this.settings.retry })).locks;
  }
}

/** `client.using(request, work, options)`; a bare transport gets a client with the default settings. */
export function withLock<T>(locks: LockClient | Locker, request: AcquireBody, work: LockedWork<T>, options: UsingOptions = {}): Promise<T> {
  return (locks instanceof LockClient ? locks : new LockClient(locks)).using(request, work, options);
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}
