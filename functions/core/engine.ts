/**
 * The lock engine: acquire, renew, release, inspect, list and sweep over a LockStore.
 *
 * Every change is a conditional write (create, or index/delete on the _seq_no/_primary_term just
 * read), so two callers can never both win a key; operations/ holds one module per operation and
 * granularity/ one per granularity. This class only wires them: it takes a request validated at the
 * edge as it is, and validates anything else once.
 */

import { planKeys } from './keys.js';
import { decodeToken } from './lease-token.js';
import type { AcquireRequest, Grant, LockState, LockTarget, Release, Renewal, RequestedMode, SweepReport } from './model.js';
import { acquire } from './operations/acquire.js';
import type { EngineContext } from './operations/context.js';
import type { OwnedToken } from './operations/owned.js';
import { inspect, list } from './operations/read.js';
import { release } from './operations/release.js';
import { renew } from './operations/renew.js';
import { sweep } from './operations/sweep.js';
import { type LockSettings, resolveSettings, type SettingsOverrides } from './settings.js';
import type { ListQuery, LockStore } from './store.js';
import { type AcquireInput, isValidated, isValidatedTarget, parseAcquireRequest, parseRelease, parseRenew, parseTarget, targetFields } from './validation.js';

export class LockEngine {
  readonly settings: Readonly<LockSettings>;
  private readonly context: EngineContext;

  constructor(store: LockStore, overrides: SettingsOverrides = {}) {
    this.settings = resolveSettings(overrides);
    this.context = { store, settings: this.settings };
  }

  /** Validates raw input (an HTTP body, an event) into an acquire request; throws ValidationError. */
  parseAcquire(input: unknown): AcquireRequest {
    return parseAcquireRequest(input, this.settings);
  }

  /**
   * Takes the target in the requested mode, or throws LockHeldError with who holds what. With
   * `waitMs` it retries with jittered backoff until the deadline.
   */
  async acquire(request: AcquireRequest | AcquireInput | unknown): Promise<Grant> {
    const validated = isAcquireRequest(request) && isValidated(request) ? request : this.parseAcquire(request);
    return acquire(this.context, validated);
  }

  /** Extends every key of the lease to now + ttlMs. Throws LeaseLostError if any key is no longer held. */
  async renew(input: { leaseToken: string; ttlMs?: number }): Promise<Renewal> {
    const { leaseToken, ttlMs } = parseRenew(input, this.settings);
    return renew(this.context, this.decode(leaseToken), ttlMs);
  }

  /** Gives the lease up on every key; a lease already gone is an outcome (`not_held`, `expired`, `partially_held`). */
  async release(input: { leaseToken: string }): Promise<Release> {
    const { leaseToken } = parseRelease(input);
    return release(this.context, this.decode(leaseToken));
  }

  /** Who holds each key of a target now (realtime). Keys nobody holds are left out. */
  async inspect(target: LockTarget, mode: RequestedMode = 'exclusive'): Promise<LockState[]> {
    const checked = isValidatedTarget(target) ? { target, mode } : parseTarget({ ...targetFields(target), mode }, this.settings);
    return inspect(this.context, checked.target, checked.mode);
  }

  /** Locks by namespace, owner or path prefix. Backed by search: reflects writes after the index refreshes (about a second). */
  async list(query: Partial<ListQuery> & { includeExpired?: boolean } = {}): Promise<LockState[]> {
    return list(this.context, query);
  }

  /** Deletes expired locks and prunes expired holders from shared ones, in batches. */
  async sweep(options: { batchSize?: number; maxBatches?: number } = {}): Promise<SweepReport> {
    return sweep(this.context, options);
  }

  private decode(leaseToken: string): OwnedToken {
    const decoded = decodeToken(leaseToken, this.settings.tokenSigningKey);
    // The target inside a token is input like any other and goes through the same rules, unless the
    // MAC shows that this engine issued it (after validating it at acquire).
    const target = decoded.signed ? decoded.target : parseTarget({ ...targetFields(decoded.target), mode: decoded.mode }, this.settings).target;
    return { ...decoded, target, keys: planKeys(target, decoded.mode) };
  }
}

function isAcquireRequest(input: unknown): input is AcquireRequest {
  return typeof input === 'object' && input !== null && 'target' in input;
}
