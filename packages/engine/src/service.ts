/**
 * The engine for in-process callers (a consumer that locks without a network hop, the benchmarks,
 * the tests): takes plain input, validates it once through the request boundary (requests.ts), and
 * hands the typed request to the engine. Same rules, same errors as the functions.
 */
import type { AcquireBody, TargetBody } from '../../client/src/wire.js';
import { LockEngine } from './engine.js';
import { ValidationError } from './errors.js';
import { targetBody } from './granularity/index.js';
import type {
  AcquireRequest,
  CompletedWork,
  Drained,
  Grant,
  LockIndexStatus,
  LockState,
  LockTarget,
  Queued,
  Release,
  Renewal,
  RequestedMode,
  Revocation,
  SweepReport,
} from './model.js';
import { type LockRequests, lockRequests, parseRequest } from './requests.js';
import type { LockSettings, SettingsOverrides } from './settings.js';
import type { LockStore } from './store.js';

/** The acquire fields as the API takes them (the wire's AcquireBody, its granularity not yet checked), or a target object with the same other fields. */
export type AcquireInput =
  | (Omit<AcquireBody, 'granularity'> & { granularity: string })
  | (Omit<AcquireRequest, 'waitMs' | 'ttlMs' | 'mode' | 'work'> & {
      mode?: RequestedMode;
      ttlMs?: number;
      waitMs?: number;
      idempotencyKey?: string | true;
    } & Pick<AcquireBody, 'payloadHash' | 'event' | 'eventKeyPath' | 'payloadPath' | 'throwOnNoKey'>);

/** A revoke or a drain: the target (flat fields or a `target` object), why, and who asks. */
export type AdminInput =
  | (Omit<TargetBody, 'granularity'> & { granularity: string; reason: string; by?: string })
  | { target: LockTarget; reason: string; by?: string };

export class LockService {
  readonly engine: LockEngine;
  readonly requests: LockRequests;

  constructor(store: LockStore, overrides: SettingsOverrides = {}) {
    this.engine = new LockEngine(store, overrides);
    this.requests = lockRequests(this.engine.settings);
  }

  /** The engine's settings (LockEngine.settings: the shared ones are the lock index's once the first call has read them). */
  get settings(): Readonly<LockSettings> {
    return this.engine.settings;
  }

  // Async so that bad input rejects the promise like every other refusal, never throws at the call.
  async acquire(input: AcquireInput | unknown): Promise<Grant> {
    return this.engine.acquire(parseRequest(this.requests.acquire, flatTarget(input)));
  }

  /** An acquire with a `wake` channel: granted at once, or queued and told on the channel later. */
  async acquireOrQueue(input: AcquireInput | unknown): Promise<Grant | Queued> {
    const request = parseRequest(this.requests.acquire, flatTarget(input));
    if (!request.wake) {
      throw new ValidationError({ fields: [{ field: 'wake', rule: 'required', message: 'is required to queue without waiting in the call' }] });
    }
    return this.engine.acquireOrQueue({ ...request, wake: request.wake });
  }

  /** An acquire with an `idempotencyKey` (or an `event` and its `eventKeyPath`): the recorded result of completed work, or a grant that took the work on. */
  async acquireWork(input: AcquireInput | unknown): Promise<Grant | Queued | CompletedWork> {
    return this.engine.acquireWork(parseRequest(this.requests.acquire, flatTarget(input)));
  }

  async renew(input: { leaseToken: string; ttlMs?: number } | unknown): Promise<Renewal> {
    return this.engine.renew(parseRequest(this.requests.renew, input));
  }

  async release(input: { leaseToken: string; record?: { status: 'completed' | 'failed'; result?: unknown; ttlMs?: number } } | unknown): Promise<Release> {
    return this.engine.release(parseRequest(this.requests.release, input));
  }

  async inspect(target: LockTarget, mode: RequestedMode = 'exclusive'): Promise<LockState[]> {
    return this.engine.inspect(parseRequest(this.requests.inspect, { ...targetBody(target), mode }));
  }

  async list(
    query: { namespace?: string; granularity?: string; owner?: string; pathPrefix?: string; limit?: number; includeExpired?: boolean } = {},
  ): Promise<LockState[]> {
    return this.engine.list(parseRequest(this.requests.list, query));
  }

  /** Break glass: takes the lock on the target from whoever holds it, with an audit record of `by` and `reason`. */
  async revoke(input: AdminInput | unknown): Promise<Revocation> {
    return this.engine.revoke(parseRequest(this.requests.revoke, flatTarget(input)));
  }

  /** Every waiter leaves the target's queue (channel waiters are told), with an audit record. */
  async drain(input: AdminInput | unknown): Promise<Drained> {
    return this.engine.drain(parseRequest(this.requests.drain, flatTarget(input)));
  }

  async status(): Promise<LockIndexStatus> {
    return this.engine.status();
  }

  async sweep(options: { batchSize?: number; maxBatches?: number } = {}): Promise<SweepReport> {
    return this.engine.sweep(parseRequest(this.requests.sweep, options));
  }
}

/** A request written with a `target` object, as the flat fields the API takes. */
function flatTarget(input: unknown): unknown {
  if (typeof input !== 'object' || input === null || !('target' in input)) return input;
  const { target, ...rest } = input as { target: LockTarget };
  return { ...targetBody(target), ...stripUndefined(rest) };
}

function stripUndefined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
