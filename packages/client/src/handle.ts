/**
 * A held lock (what LockClient.acquire returns): its fencing token, its current lease token, when
 * its lease ends by the caller's clock, `extend()`, `release()`, and a `signal` that aborts when the
 * lock is lost:
 *
 * - a renewal is refused because the lease is gone (LeaseLostError) or is not this one (LeaseTokenMismatchError);
 * - or the lease runs out by the caller's clock, less a safety margin, before a renewal succeeded.
 *
 * The caller's clock is monotonic (performance.now) and a lease is counted from the moment the
 * request that set it was sent: the service started it later, so the local end is never after the
 * service's, whatever the two wall clocks say. A released lock stops renewing; its signal stays as it is.
 */
import { LeaseLostError, LeaseTokenMismatchError, type LockServiceError } from './errors.js';
import { InsufficientTimeError } from './local-errors.js';
import type { LocalSlot } from './local-lock-table.js';
import type { CallOptions, Locker } from './locker.js';
import { fitRenewal, type RemainingTime } from './remaining-time.js';
import { isTransient, withRetries } from './retry.js';
import type { LockClientSettings } from './settings.js';
import type { GrantBody, ReleaseBody, ReleaseResultBody, RenewalBody } from './wire.js';

const now = (): number => performance.now();

export interface LockEvents {
  /** After each successful renewal (background or extend). */
  onRenew?: (renewal: RenewalBody) => void;
  /** Once, when the lock is lost, before its signal aborts. */
  onLost?: (reason: LockServiceError) => void;
}

/** What LockClient hands a new handle. */
export interface LockInit extends LockEvents {
  transport: Locker;
  settings: Readonly<LockClientSettings>;
  grant: GrantBody;
  /** performance.now() when the acquire that got the grant was sent, and when its answer came. */
  sentAt: number;
  receivedAt: number;
  /** What renewals ask for (the caller's TTL before any cap for the remaining time). */
  renewTtlMs: number;
  remainingTimeMs?: RemainingTime | undefined;
  /** Renew in the background at `renewFraction` of the TTL. */
  autoRenew: boolean;
  slot?: LocalSlot | undefined;
}

export type LockState = 'held' | 'lost' | 'released';

export class Lock {
  /** The grant as the service answered it (keys, mode, owner, `reused`...). */
  readonly grant: GrantBody;
  /** Pass it with every write to the protected resource; the resource refuses smaller ones. A renewal keeps it. */
  readonly fencingToken: string;
  /** Aborts when the lock is lost; its reason is a LeaseLostError or LeaseTokenMismatchError. */
  readonly signal: AbortSignal;

  private readonly init: LockInit;
  private readonly controller = new AbortController();
  private readonly wallOffset: number;
  private token: string;
  /** The lease's local end and length (performance.now() ms). */
  private leaseEnd: number;
  private leaseTtl: number;
  private lossReason: LockServiceError | undefined;
  private releasing: Promise<ReleaseResultBody> | undefined;
  /** The renewals in flight, one after the other. */
  private renewals: Promise<unknown> = Promise.resolve();
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Set when the function's remaining time left no room to renew: the lease then runs out in time. */
  private outOfTime: InsufficientTimeError | undefined;

  constructor(init: LockInit) {
    this.init = init;
    this.grant = init.grant;
    this.fencingToken = init.grant.fencingToken;
    this.signal = this.controller.signal;
    this.token = init.grant.leaseToken;
    this.leaseTtl = init.grant.ttlMs;
    this.wallOffset = Date.now() - init.receivedAt;
    // After a wait (waitMs) the grant came later than the request left: its expiresAt read by this
    // clock is then the end (callers' clocks agree within the service's maxClockSkewMs), never more
    // than a full TTL after the answer came.
    this.leaseEnd = Math.max(init.sentAt + this.leaseTtl, Math.min(init.grant.expiresAtMs - this.wallOffset, init.receivedAt + this.leaseTtl));
    init.slot?.leaseEndsAt(this.expiresAtMs);
    this.armExpiry();
    if (init.autoRenew) this.scheduleRenewal(init.sentAt + this.leaseTtl * init.settings.renewFraction - now());
  }

  /** The current lease token: it changes with each renewal. */
  get leaseToken(): string {
    return this.token;
  }

  /** When the lease ends by the caller's clock unless renewed (epoch ms). */
  get expiresAtMs(): number {
    return Math.floor(this.leaseEnd + this.wallOffset);
  }

  get expiresAt(): Date {
    return new Date(this.expiresAtMs);
  }

  /** The lease's current length (ms). */
  get ttlMs(): number {
    return this.leaseTtl;
  }

  get state(): LockState {
    return this.releasing !== undefined ? 'released' : this.lossReason ? 'lost' : 'held';
  }

  /** Why the lock was lost, once it was. */
  get lost(): LockServiceError | undefined {
    return this.lossReason;
  }

  /** The moment (performance.now() ms) the lock counts as lost unless renewed. */
  get lossAt(): number {
    return this.leaseEnd - Math.min(this.init.settings.safetyMarginMs, this.leaseTtl / 4);
  }

  /**
   * Renews the lease (for `ttlMs`, default the lock's TTL; within the function's remaining time when
   * the client knows it) and swaps in the new lease token. Transient failures are retried while the
   * lease lasts. A refusal that says the lease is gone loses the lock (and aborts its signal).
   */
  extend(ttlMs: number = this.init.renewTtlMs, options: CallOptions = {}): Promise<this> {
    const renewal = this.renewals.then(() => this.renew(ttlMs, true, options));
    this.renewals = renewal.catch(() => {});
    return renewal.then(() => this);
  }

  /**
   * Gives the lease up (idempotent: later calls answer the first one's outcome). Transient failures
   * are retried; if it still fails, the lease ends on its own at its expiry. Also after a loss.
   */
  release(options: CallOptions & { record?: ReleaseBody['record'] } = {}): Promise<ReleaseResultBody> {
    this.releasing ??= (async () => {
      this.stopTimers();
      const { transport, settings, slot } = this.init;
      const { record, ...callOptions } = options;
      try {
        return await withRetries(() => transport.release({ leaseToken: this.token, ...(record ? { record } : {}) }, callOptions), {
          retry: settings.retry,
          ...signalOf(callOptions),
        });
      } finally {
        // Only now: the next local holder must not find this lease still in the lock documents.
        slot?.release();
      }
    })();
    return this.releasing;
  }

  private async renew(ttlMs: number, retry: boolean, options: CallOptions): Promise<RenewalBody> {
    if (this.lossReason) throw this.lossReason;
    if (this.releasing !== undefined) throw new LeaseLostError({}, 'The lock was released: there is nothing to extend');
    const { transport, settings, remainingTimeMs } = this.init;
    const asked = remainingTimeMs ? fitRenewal(ttlMs, remainingTimeMs, settings) : ttlMs;
    const started = now();
    const call = () => transport.renew({ leaseToken: this.token, ttlMs: asked }, options);
    let renewal: RenewalBody;
    try {
      renewal = retry ? await withRetries(call, { retry: settings.retry, until: () => this.lossAt, ...signalOf(options) }) : await call();
    } catch (error) {
      if (error instanceof LeaseLostError || error instanceof LeaseTokenMismatchError) this.lose(error);
      throw error;
    }
    // Too late: the signal has fired and the work was told to stop; a lease renewed after that is released with the lock.
    if (this.lossReason) throw this.lossReason;
    if (this.releasing === undefined) {
      this.token = renewal.leaseToken;
      this.leaseTtl = renewal.ttlMs;
      this.leaseEnd = started + renewal.ttlMs;
      this.init.slot?.leaseEndsAt(this.expiresAtMs);
      this.armExpiry();
      this.init.onRenew?.(renewal);
    }
    return renewal;
  }

  /** One background renewal: on success the next is scheduled; on a transient failure it is tried again soon. */
  private renewInBackground(): void {
    if (this.state !== 'held') return;
    const { settings } = this.init;
    const started = now();
    const attempt = this.renewals.then(() => this.renew(this.init.renewTtlMs, false, {}));
    this.renewals = attempt.then(
      () => this.scheduleRenewal(started + this.leaseTtl * settings.renewFraction - now()),
      (error: unknown) => {
        if (this.state !== 'held') return;
        if (error instanceof InsufficientTimeError) {
          // No room left before the function's deadline: the lease runs out in time and the expiry says so.
          this.outOfTime = error;
          return;
        }
        if (!isTransient(error)) {
          this.lose(new LeaseLostError({}, `The renewal was refused: ${(error as Error).message}`, { cause: error }));
          return;
        }
        // While the lease may still be ours, try again: about four times before it runs out, at most once a second.
        this.scheduleRenewal(Math.min(1_000, Math.max(50, (this.lossAt - now()) / 4)));
      },
    );
  }

  private scheduleRenewal(delayMs: number): void {
    clearTimeout(this.renewTimer);
    if (this.state !== 'held') return;
    this.renewTimer = setTimeout(() => this.renewInBackground(), Math.max(0, delayMs));
    this.renewTimer.unref?.();
  }

  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(
      () => {
        const message = this.outOfTime
          ? `The lease ran out: the function's remaining time left no room to renew it (${this.outOfTime.message})`
          : 'The lease ran out by the local clock (less the safety margin) before a renewal succeeded';
        this.lose(new LeaseLostError({}, message, this.outOfTime ? { cause: this.outOfTime } : {}));
      },
      Math.max(0, this.lossAt - now()),
    );
    this.expiryTimer.unref?.();
  }

  private stopTimers(): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
  }

  /** Marks the lock lost (once; not after a release): stops renewing, frees the local slot, aborts the signal. */
  private lose(reason: LockServiceError): void {
    if (this.state !== 'held') return;
    this.lossReason = reason;
    this.stopTimers();
    this.init.slot?.release();
    this.init.onLost?.(reason);
    this.controller.abort(reason);
  }
}

const signalOf = (options: CallOptions): { signal?: AbortSignal } => (options.signal ? { signal: options.signal } : {});
