/**
 * The lock service in memory, for your tests: the engine the functions run (its own decisions, not
 * a second implementation of the rules) over the in-memory lock store, answering through the same
 * presentation as the functions (wire bodies, errors as this package's classes). Plug `locker` into
 * a LockClient as you would httpTransport or invokeTransport; move `clock` on to run leases out;
 * ask `faults` for a lost answer or a store that is down; revoke a holder as an operator would.
 */

import { type Locker, lockError, type RevocationBody, type SweepReportBody, type TargetBody } from '@es-lease-locks/client';
import { LockService, StoreUnavailableError } from '@es-lease-locks/engine';
import { engineLocker } from '@es-lease-locks/engine/locker';
import { MemoryLockStore } from '@es-lease-locks/engine/memory-store';
import { presentRevocation, presentSweep } from '@es-lease-locks/engine/present';
import { TestClock } from './test-clock.js';
import { type LockerOperation, TestFaults } from './test-faults.js';

export interface TestLocksOptions {
  /** The largest clock difference the service allows between callers (its MAX_CLOCK_SKEW_MS; 500 ms, as deployed, by default). */
  maxClockSkewMs?: number;
  /** Leases: the default, shortest and longest (the service's LOCK_TTL_DEFAULT_MS, _MIN_MS, _MAX_MS). */
  ttl?: { defaultMs?: number; minMs?: number; maxMs?: number };
}

/** Calls that write: a lost answer leaves their outcome unknown (the client retries them with the same requestId). */
const WRITES: ReadonlySet<LockerOperation> = new Set(['acquire', 'renew', 'release']);

/** What the tests of this package read of a TestLocks beyond its public API (the store contract runs on its store). */
const internals = new WeakMap<TestLocks, { store: MemoryLockStore; service: LockService }>();

export class TestLocks {
  /** The service's clock: `advance(ms)` runs leases and records out. */
  readonly clock: TestClock = new TestClock();
  /** Faults on demand: `loseNextAnswer()`, `storeDown()`. */
  readonly faults: TestFaults = new TestFaults();
  /** The service as a transport: `new LockClient({ transport: locks.locker })`. */
  readonly locker: Locker;
  readonly #service: LockService;
  /** The service without the test's lost answers (the test's own looks). */
  readonly #plain: Locker;

  constructor(options: TestLocksOptions = {}) {
    const store = storeThatMayBeDown(new MemoryLockStore('test-locks'), this.faults);
    this.#service = new LockService(store, {
      now: this.clock.now,
      ...(options.maxClockSkewMs === undefined ? {} : { maxClockSkewMs: options.maxClockSkewMs }),
      ...(options.ttl === undefined ? {} : { ttl: options.ttl }),
    });
    this.#plain = engineLocker(this.#service);
    this.locker = lossy(this.#plain, this.faults);
    internals.set(this, { store, service: this.#service });
  }

  /** An operator's revoke: whoever holds the target loses it (their next renewal or release is refused), with an audit record. */
  async revoke(target: TargetBody, { reason = 'revoked by the test', by = 'test' }: { reason?: string; by?: string } = {}): Promise<RevocationBody> {
    return presentRevocation(await this.#service.revoke({ ...target, reason, by }));
  }

  /** Moves the clock just past the end of every lease on the target (and the clock-skew allowance): they are over for everyone. */
  async expireLeases(target: TargetBody): Promise<void> {
    const { locks } = await this.#plain.inspect!(target);
    const lastEnd = Math.max(0, ...locks.flatMap((state) => state.holders.map((holder) => holder.expiresAtMs)));
    const behind = lastEnd + this.#service.settings.maxClockSkewMs + 1 - this.clock.now();
    if (behind > 0) this.clock.advance(behind);
  }

  /** The scheduled sweeper's run: removes what ended (leases, waiters, records past their time). */
  async sweep(): Promise<SweepReportBody> {
    return presentSweep(await this.#service.sweep());
  }
}

/** A new lock service in memory (see TestLocks). */
export function testLocks(options: TestLocksOptions = {}): TestLocks {
  return new TestLocks(options);
}

/** The store a TestLocks runs on, for the store contract's tests (typed loosely: its type is the engine's). */
export function storeOf(locks: TestLocks): unknown {
  return internals.get(locks)?.store;
}

/** Every call of the store fails as an unreachable cluster does while the test has it down. */
function storeThatMayBeDown(store: MemoryLockStore, faults: TestFaults): MemoryLockStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        faults.isStoreDown
          ? Promise.reject(new StoreUnavailableError({ operation: String(property) }))
          : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
}

/** The Locker whose answers the test may lose: the call runs in full, then the caller hears what a dropped connection says. */
function lossy(locker: Locker, faults: TestFaults): Locker {
  const wrap =
    <Body, Answer>(operation: LockerOperation, call: (body: Body) => Promise<Answer>) =>
    async (body: Body): Promise<Answer> => {
      if (!faults.takeLostAnswer(operation)) return call(body);
      await call(body).catch(() => undefined);
      const requestId = (body as { requestId?: unknown }).requestId;
      if (!WRITES.has(operation)) throw lockError('StoreUnavailableError', `${operation}: the answer was lost (a test fault). Retry.`);
      throw lockError(
        'LockOutcomeUnknownError',
        `${operation}: the answer was lost (a test fault); the call may have applied. Retry${typeof requestId === 'string' ? ` with the same requestId (${requestId})` : ''}.`,
        typeof requestId === 'string' ? { requestId } : {},
      );
    };
  return {
    acquire: wrap('acquire', (body) => locker.acquire(body)),
    renew: wrap('renew', (body) => locker.renew(body)),
    release: wrap('release', (body) => locker.release(body)),
    inspect: wrap('inspect', (query) => locker.inspect!(query)),
    list: wrap('list', (query) => locker.list!(query)),
  };
}
