/**
 * The lock engine: acquire, renew, release, inspect, list and sweep over a LockStore.
 *
 * Every change is a conditional write (create, or index/delete on the _seq_no/_primary_term just
 * read), so two callers can never both win a key; operations/ holds one module per operation and
 * granularity/ one per granularity. This class only wires them, and takes typed requests only: the
 * functions build them with requests.ts, in-process callers through LockService.
 */

import { ValidationError } from './errors.js';
import type { AcquireRequest, CompletedWork, Drained, Grant, LockIndexStatus, LockState, Queued, Release, Renewal, Revocation, SweepReport } from './model.js';
import { acquire, acquireOrQueue } from './operations/acquire.js';
import type { EngineContext } from './operations/context.js';
import { drain } from './operations/drain.js';
import { inspect, list } from './operations/read.js';
import { release } from './operations/release.js';
import { renew } from './operations/renew.js';
import { revoke } from './operations/revoke.js';
import { status } from './operations/status.js';
import { sweep } from './operations/sweep.js';
import { tellWaiters } from './operations/wake-waiters.js';
import { acquireWork, releaseWithRecord } from './operations/work.js';
import type { AdminRequest, InspectRequest, ListRequest, ReleaseRequest, RenewRequest, SweepRequest } from './requests.js';
import { type LockSettings, resolveSettings, type SettingsOverrides, sharedSettingsOf } from './settings.js';
import { settleSharedSettings } from './shared-settings.js';
import type { LockStore } from './store.js';

export class LockEngine {
  private readonly context: EngineContext;
  private readonly settle: () => Promise<Readonly<LockSettings>>;
  private settled: Promise<Readonly<LockSettings>> | undefined;

  constructor(store: LockStore, overrides: SettingsOverrides = {}) {
    const own = resolveSettings(overrides);
    const context: EngineContext = {
      store,
      settings: own,
      tellWaiters: (written) => tellWaiters(context, written),
    };
    this.context = context;
    this.settle = () => settleSharedSettings(store, own, sharedSettingsOf(overrides));
  }

  /**
   * The engine's settings: its own until its first call has taken the shared ones its lock index
   * records (settings.ts, SHARED_SETTINGS); `ready()` gives them once taken.
   */
  get settings(): Readonly<LockSettings> {
    return this.context.settings;
  }

  /**
   * The settings every call works with: the shared ones read from the lock index once, or a refusal
   * when this engine was given other values (a refusal or a failed read is tried again by the next call).
   */
  ready(): Promise<Readonly<LockSettings>> {
    this.settled ??= this.settle().then(
      (settings) => {
        this.context.settings = settings;
        return settings;
      },
      (error: unknown) => {
        this.settled = undefined;
        throw error;
      },
    );
    return this.settled;
  }

  /** Runs an operation once the settings are settled. */
  private async run<T>(operation: (context: EngineContext) => Promise<T>): Promise<T> {
    await this.ready();
    return operation(this.context);
  }

  /**
   * Takes the target in the requested mode, or throws LockHeldError with who holds what. With
   * `waitMs` it retries with jittered backoff until the deadline.
   */
  acquire(request: AcquireRequest): Promise<Grant> {
    if (request.wake) {
      return Promise.reject(
        new ValidationError({ fields: [{ field: 'wake', rule: 'not_here', message: 'a waiter with a wake channel acquires with acquireOrQueue' }] }),
      );
    }
    if (request.work || request.missingKeyPath !== undefined) {
      return Promise.reject(
        new ValidationError({
          fields: [{ field: 'idempotencyKey', rule: 'not_here', message: 'work with an idempotency key is acquired with acquireWork' }],
        }),
      );
    }
    return this.run((context) => acquire(context, request));
  }

  /**
   * An acquire that waits in the lock's queue rather than in the call: granted at once (and told on
   * its wake channel too), or queued, to be told on the channel when the lock is handed over to it or
   * its ticket runs out.
   */
  acquireOrQueue(request: AcquireRequest & { wake: NonNullable<AcquireRequest['wake']> }): Promise<Grant | Queued> {
    if (!this.settings.notifier) return Promise.reject(wakeNotConfigured());
    return this.run((context) => acquireOrQueue(context, request));
  }

  /**
   * An acquire with an idempotency key (`work`): the recorded result when the work was completed, or a
   * grant that has taken the work on (WorkInProgressError while another delivery has it;
   * WorkPayloadMismatchError when it was completed or is in progress for another payload). With `wake`,
   * it queues like acquireOrQueue; the claim (the same acquire, without wake) takes the work on. An
   * acquire whose event had no key at its path (`missingKeyPath`) is a plain acquire that says so.
   */
  acquireWork(request: AcquireRequest): Promise<Grant | Queued | CompletedWork> {
    if (request.wake && !this.settings.notifier) return Promise.reject(wakeNotConfigured());
    const { work, missingKeyPath, ...plain } = request;
    if (work) return this.run((context) => acquireWork(context, { ...plain, work }));
    if (missingKeyPath === undefined) {
      return Promise.reject(new ValidationError({ fields: [{ field: 'idempotencyKey', rule: 'required', message: 'is required to run work once' }] }));
    }
    // Its event had no key where the call said (and it did not ask for an error): the lock alone, no work, and the answer says so.
    const granted = plain.wake ? this.acquireOrQueue({ ...plain, wake: plain.wake }) : this.acquire(plain);
    return granted.then((answer) => ('status' in answer ? answer : { ...answer, missingKeyPath }));
  }

  /** Extends every key of the lease to now + ttlMs. Throws LeaseLostError if any key is no longer held. */
  renew(request: RenewRequest): Promise<Renewal> {
    return this.run((context) => renew(context, request.lease, request.ttlMs));
  }

  /** Gives the lease up on every key; a lease already gone is an outcome (`not_held`, `expired`, `partially_held`). */
  release(request: ReleaseRequest): Promise<Release> {
    // Recording the outcome of the lease's work: only while the lease still holds the lock (operations/work.ts).
    const { record } = request;
    if (record) return this.run((context) => releaseWithRecord(context, request.lease, record));
    return this.run((context) => release(context, request.lease));
  }

  /** Who holds each key of a target now (realtime). Keys nobody holds are left out. */
  inspect(request: InspectRequest): Promise<LockState[]> {
    return this.run((context) => inspect(context, request.target, request.mode));
  }

  /** Locks by namespace, owner or path prefix. Backed by search: reflects writes after the index refreshes (about a second). */
  list(request: ListRequest): Promise<LockState[]> {
    return this.run((context) => list(context, request));
  }

  /**
   * Break glass (an operator): takes the lock on the target from whoever holds it, audited. The
   * revoked holders' next renew answers LeaseLostError; every later grant's token is above theirs.
   */
  revoke(request: AdminRequest): Promise<Revocation> {
    return this.run((context) => revoke(context, request));
  }

  /** An operator's drain: every waiter leaves the target's queue, audited; channel waiters are told. */
  drain(request: AdminRequest): Promise<Drained> {
    return this.run((context) => drain(context, request));
  }

  /** The lock index's incarnation, shards, counts and oldest live lease (a scan: for operators, never on a lock's path). */
  status(): Promise<LockIndexStatus> {
    return this.run((context) => status(context));
  }

  /** Deletes expired locks and prunes expired holders from shared ones, in batches. */
  sweep(request: SweepRequest = {}): Promise<SweepReport> {
    return this.run((context) => sweep(context, request));
  }
}

const wakeNotConfigured = (): ValidationError =>
  new ValidationError({
    fields: [{ field: 'wake', rule: 'not_configured', message: 'wake-ups are not configured on this deployment (no notifier): wait with waitMs instead' }],
  });
