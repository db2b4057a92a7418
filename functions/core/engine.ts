/**
 * The lock engine: acquire, renew, release, inspect, list and sweep over a LockStore.
 *
 * Every change is a conditional write (create, or index/delete on the _seq_no/_primary_term just
 * read), so two callers can never both win a key. Multi-key sets are all or nothing: a call that
 * meets a conflict removes whatever it wrote before it returns.
 */
import { createHash } from 'node:crypto';
import { allExclusive } from './compatibility.js';
import {
  FencingRangeError,
  LeaseLostError,
  LeaseTokenMismatchError,
  LockContentionError,
  LockHeldError,
  LockOutcomeUnknownError,
  StoreRejectedError,
  StoreUnavailableError,
} from './errors.js';
import { encodable, maxFencingToken } from './fencing.js';
import { decodeToken, encodeToken, newLease, proofMatches, type DecodedToken, type NewLease, type WriteHint } from './lease-token.js';
import { decideAcquire, fenceOf, holderViews, isLive, removeLeaseOp, settleFences, lockDocument, type Claim } from './lock-document.js';
import { describeTarget, planKeys } from './keys.js';
import type { AcquireRequest, ConflictingKey, Grant, LockState, LockTarget, PlannedKey, Release, Renewal, RequestedMode, StoredHolder, SweepReport } from './model.js';
import { resolveSettings, type LockSettings, type SettingsOverrides } from './settings.js';
import type { ListQuery, LockStore, StoredLock, WriteOp, WriteOutcome } from './store.js';
import { acquireSchema, parseWith, releaseSchema, renewSchema, toAcquireRequest } from './validation.js';

interface HeldKey {
  key: PlannedKey;
  lock: StoredLock;
  reused: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * Jittered exponential pause between rounds (up to 1, 2, 4 ... 128 ms): N writers racing on one document
 * need about N rounds, and spreading them out wastes fewer round trips than hammering.
 */
const contentionPause = (round: number): Promise<void> => sleep(Math.random() * Math.min(128, 2 ** round));

export class LockEngine {
  readonly settings: Readonly<LockSettings>;
  private readonly acquireSchema;
  private readonly renewSchema;

  constructor(
    private readonly store: LockStore,
    overrides: SettingsOverrides = {},
  ) {
    this.settings = resolveSettings(overrides);
    this.acquireSchema = acquireSchema(this.settings);
    this.renewSchema = renewSchema(this.settings);
  }

  /** Validates raw input (an HTTP body, an event) into an acquire request; throws ValidationError. */
  parseAcquire(input: unknown): AcquireRequest {
    return toAcquireRequest(parseWith(this.acquireSchema, input));
  }

  /**
   * Takes the target in the requested mode, or throws LockHeldError with who holds what. With
   * `waitMs` it retries with jittered backoff until the deadline.
   */
  async acquire(input: AcquireRequest | unknown): Promise<Grant> {
    const request = this.parseAcquire(isAcquireRequest(input) ? flattenAcquire(input) : input);
    const keys = planKeys(request.target, request.mode);
    const lease = newLease();
    const started = this.settings.now();
    const deadline = started + request.waitMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.tryAcquire(request, keys, lease);
      } catch (error) {
        if (!(error instanceof LockHeldError || error instanceof LockContentionError)) throw error;
        const remaining = deadline - this.settings.now();
        if (remaining <= 0) {
          if (error instanceof LockHeldError && request.waitMs > 0) {
            throw new LockHeldError(error.conflicts, error.retryAfterMs, { cause: error, waitedMs: this.settings.now() - started });
          }
          throw error;
        }
        const ceiling = Math.min(this.settings.retry.maxDelayMs, this.settings.retry.baseDelayMs * 2 ** attempt);
        const hinted = error instanceof LockHeldError ? error.retryAfterMs : ceiling;
        await sleep(Math.max(1, Math.min(remaining, Math.min(ceiling, hinted) * (0.5 + Math.random() / 2))));
      }
    }
  }

  private async tryAcquire(request: AcquireRequest, keys: PlannedKey[], lease: NewLease): Promise<Grant> {
    const { maxClockSkewMs: skew } = this.settings;
    const giveUpAt = this.settings.now() + this.settings.contentionBudgetMs;
    const held = new Map<string, HeldKey>();
    const call = request.requestId === undefined ? null : callFingerprint(request);
    let latestExpiry = 0;
    const abandon = async (error: Error, unresolved = false): Promise<never> => {
      throw await this.abandon(request, held, lease.leaseId, error, unresolved, latestExpiry + skew);
    };
    // A free exclusive key costs one create and no read; anything with shared holders is read first.
    let known: Map<string, StoredLock | null> = allExclusive(keys) ? new Map() : await this.store.read(keys.map((key) => key.docId));
    let pending = keys;
    let contended = false;
    let ambiguousRounds = 0;
    for (let round = 0; pending.length > 0; round++) {
      // Only contention spends the budget: a round after a timed-out write is resolving that write.
      if (contended && this.settings.now() > giveUpAt) await abandon(new LockContentionError(pending.map((key) => key.key), round));
      const now = this.settings.now();
      const claim: Claim = { leaseId: lease.leaseId, proof: lease.proof, owner: request.owner, requestId: request.requestId ?? null, call, expiresAt: now + request.ttlMs };
      const writes: Array<{ key: PlannedKey; op: WriteOp; reused: boolean }> = [];
      const conflicts: ConflictingKey[] = [];
      let clearsAt = now;
      for (const key of pending) {
        const decision = decideAcquire(known.get(key.docId) ?? null, key, claim, now, skew, held.size === 0);
        if (decision.kind === 'conflict') {
          conflicts.push(decision.conflict);
          clearsAt = Math.max(clearsAt, decision.clearsAt);
        } else if (decision.kind === 'already-held') {
          held.set(key.docId, { key, lock: decision.lock, reused: held.get(key.docId)?.reused ?? false });
        } else {
          writes.push({ key, op: decision.op, reused: decision.reused });
        }
      }
      if (conflicts.length > 0) {
        const retryAfterMs = Math.max(this.settings.retry.baseDelayMs, Math.min(this.settings.maxRetryAfterMs, clearsAt - now));
        await abandon(new LockHeldError(conflicts, retryAfterMs));
      }
      if (writes.length === 0) break;

      latestExpiry = claim.expiresAt;
      const written = await this.writeRound(writes.map((write) => write.op));
      const notApplied: PlannedKey[] = [];
      written.outcomes.forEach((outcome, index) => {
        const write = writes[index]!;
        if (outcome.ok && write.op.kind !== 'delete') {
          held.set(write.key.docId, {
            key: write.key,
            lock: { docId: write.key.docId, seqNo: outcome.seqNo, primaryTerm: outcome.primaryTerm, index: outcome.index, body: write.op.body },
            reused: write.reused,
          });
        } else {
          notApplied.push(write.key);
        }
      });
      if (written.ambiguous) {
        // Some writes may or may not have landed. The primary tells (a copy cut off from the cluster
        // could say "not there" for a write that did land); whatever holds our lease is ours to roll back.
        if (++ambiguousRounds > 1) await abandon(written.ambiguous);
        try {
          known = await this.store.readPrimary(notApplied.map((key) => key.docId));
        } catch (readError) {
          await abandon(readError as Error, true);
        }
        for (const key of notApplied) {
          const lock = known.get(key.docId);
          if (lock?.body.holders.some((holder) => holder.lease === lease.leaseId)) held.set(key.docId, { key, lock, reused: held.get(key.docId)?.reused ?? false });
        }
        pending = notApplied;
        contended = false;
        continue;
      }
      if (written.failure) await abandon(written.failure);
      pending = notApplied;
      contended = notApplied.length > 0;
      // Someone wrote in between (a compatible holder, a takeover, a sweep): read again and redecide,
      // after a short jittered pause so that writers racing on a hot ancestor spread out.
      if (notApplied.length > 0) {
        await contentionPause(round);
        known = await this.store.read(notApplied.map((key) => key.docId));
      }
    }
    // Never a grant for a key this call may have lost: every key was written (or found) with our
    // lease, and no one can take a key over before its expiry (plus skew). If the call stalled so
    // long that the earliest of them is near its end, it is not a grant.
    const out = [...held.values()].find(({ lock }) => {
      const mine = lock.body.holders.find((holder) => holder.lease === lease.leaseId);
      return mine?.fence === null && !encodable(lock.primaryTerm, lock.seqNo);
    });
    if (out) await abandon(new FencingRangeError(`the lock index's write position (term ${out.lock.primaryTerm}, seq_no ${out.lock.seqNo}) is beyond what a fencing token encodes; create a new lock index`, { primaryTerm: out.lock.primaryTerm, seqNo: out.lock.seqNo }));
    const grant = this.grantFrom(request, keys, held, lease);
    const left = grant.expiresAt - this.settings.now();
    if (left < request.ttlMs / 2) {
      await abandon(
        new StoreUnavailableError(
          `The acquire of ${describeTarget(request.target)} stalled (Elasticsearch or this process): its lease would have had ${Math.max(0, left)} ms of ${request.ttlMs} left, so it was rolled back. Retry.`,
          { operation: 'acquire' },
        ),
      );
    }
    return grant;
  }

  /** One round of writes; item failures and a lost answer come back as values so that the caller can roll back what did apply. */
  private async writeRound(ops: WriteOp[]): Promise<{ outcomes: WriteOutcome[]; ambiguous?: StoreUnavailableError; failure?: Error }> {
    let outcomes: WriteOutcome[];
    try {
      outcomes = await this.store.write(ops);
    } catch (error) {
      if (error instanceof StoreUnavailableError && error.context.ambiguous) {
        return { outcomes: ops.map((op) => ({ ok: false, docId: op.docId, reason: 'conflict' })), ambiguous: error };
      }
      // Not sent, or refused as a whole: nothing of it applied.
      return { outcomes: ops.map((op) => ({ ok: false, docId: op.docId, reason: 'conflict' })), failure: error as Error };
    }
    let ambiguous: StoreUnavailableError | undefined;
    let failure: Error | undefined;
    for (const outcome of outcomes) {
      if (outcome.ok || outcome.reason !== 'error') continue;
      if (outcome.error instanceof StoreUnavailableError && outcome.error.context.ambiguous) ambiguous ??= outcome.error;
      else failure ??= outcome.error;
    }
    return { outcomes, ...(ambiguous ? { ambiguous } : {}), ...(failure ? { failure } : {}) };
  }

  /**
   * A failed acquire gives back whatever it took. When it cannot (the store is down) or cannot know
   * what it took (a write's answer was lost and the read-back failed), the caller must hear that it
   * may hold keys until `mayHoldUntil`, and that a retry with the same requestId recovers them.
   */
  private async abandon(request: AcquireRequest, held: Map<string, HeldKey>, leaseId: string, error: Error, unresolved: boolean, mayHoldUntil: number): Promise<Error> {
    const clean = await this.rollback(held, leaseId);
    const ambiguous = error instanceof StoreUnavailableError && error.context.ambiguous;
    if (clean && !unresolved) {
      return ambiguous
        ? new StoreUnavailableError(`Elasticsearch failed twice during the acquire of ${describeTarget(request.target)}; nothing is held. Retry.`, { operation: 'acquire' }, { cause: error })
        : error;
    }
    const retry = request.requestId
      ? `Retry with the same requestId (${request.requestId}) to get it back.`
      : `Without a requestId a retry cannot claim it: the keys stay blocked until ${new Date(mayHoldUntil).toISOString()}.`;
    return new LockOutcomeUnknownError(
      `The acquire of ${describeTarget(request.target)} failed (${error.message}) and may still hold some of its keys. ${retry}`,
      { operation: 'acquire', ...(request.requestId ? { requestId: request.requestId } : {}), mayHoldUntil },
      { cause: error },
    );
  }

  private grantFrom(request: AcquireRequest, keys: PlannedKey[], held: Map<string, HeldKey>, lease: NewLease): Grant {
    const grantedKeys = keys.map((key) => {
      const entry = held.get(key.docId)!;
      const mine = entry.lock.body.holders.find((holder) => holder.lease === lease.leaseId)!;
      return { planned: key, entry, mine, fencingToken: fenceOf(mine, entry.lock) };
    });
    const expiresAt = Math.min(...grantedKeys.map((granted) => granted.mine.expiresAt));
    const hints = grantedKeys.map(({ entry }) => hintFor(entry.lock));
    return {
      leaseToken: this.token(lease.leaseId, lease.secret, request.target, request.mode, hints, expiresAt),
      leaseId: lease.leaseId,
      fencingToken: maxFencingToken(grantedKeys.map((granted) => granted.fencingToken)),
      expiresAt,
      ttlMs: request.ttlMs,
      target: request.target,
      mode: request.mode,
      owner: request.owner,
      keys: grantedKeys.map(({ planned, fencingToken }) => ({ key: planned.key, mode: planned.mode, fencingToken })),
      reused: grantedKeys.some((granted) => granted.entry.reused),
    };
  }

  private token(leaseId: string, secret: string, target: LockTarget, mode: RequestedMode, hints: WriteHint[], expiresAt: number): string {
    return encodeToken({ leaseId, target, mode, hints, expiresAt }, secret, this.settings.tokenSigningKey);
  }

  /**
   * Removes our lease from every key this call holds (a retried grant already carries the new lease
   * id, so it goes too). False when some of it may remain (the store failed): it ends with the lease.
   */
  private async rollback(held: Map<string, HeldKey>, leaseId: string): Promise<boolean> {
    const locks = [...held.values()].map((entry) => entry.lock);
    held.clear();
    if (locks.length === 0) return true;
    try {
      await this.removeLease(locks, leaseId);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Removes the lease from each document, re-reading (from the primary) the ones that changed under
   * us. Returns the documents the lease was removed from and those it was not on.
   */
  private async removeLease(locks: StoredLock[], leaseId: string): Promise<{ removed: StoredHolder[]; missing: string[] }> {
    const removed: StoredHolder[] = [];
    const missing: string[] = [];
    let current = locks;
    // Giving a lease up (or rolling one back) matters more than taking one: it gets three times the budget.
    const giveUpAt = this.settings.now() + 3 * this.settings.contentionBudgetMs;
    for (let round = 0; current.length > 0; round++) {
      if (round > 0 && this.settings.now() > giveUpAt) throw new LockContentionError(current.map((lock) => lock.body.key), round);
      const now = this.settings.now();
      const writes: Array<{ lock: StoredLock; op: WriteOp }> = [];
      for (const lock of current) {
        const op = removeLeaseOp(lock, leaseId, now, this.settings.maxClockSkewMs);
        if (op) writes.push({ lock, op });
        else missing.push(lock.body.key);
      }
      if (writes.length === 0) break;
      const outcomes = await this.store.write(writes.map((write) => write.op));
      const changed: string[] = [];
      let failure: Error | undefined;
      outcomes.forEach((outcome, index) => {
        const { lock } = writes[index]!;
        if (outcome.ok) removed.push(lock.body.holders.find((holder) => holder.lease === leaseId)!);
        else if (outcome.reason === 'error') failure ??= outcome.error;
        else changed.push(lock.docId);
      });
      if (failure) throw failure;
      if (changed.length === 0) break;
      await contentionPause(round);
      // "Gone" must come from the primary: a stale copy may not have our lease yet.
      const fresh = await this.store.readPrimary(changed);
      current = [];
      for (const docId of changed) {
        const lock = fresh.get(docId);
        if (lock) current.push(lock);
        else missing.push(writes.find((write) => write.lock.docId === docId)!.lock.body.key);
      }
    }
    return { removed, missing };
  }

  private decode(leaseToken: string): DecodedToken & { keys: PlannedKey[] } {
    const decoded = decodeToken(leaseToken, this.settings.tokenSigningKey);
    // The target inside a token is input like any other and goes through the same rules, unless the
    // MAC shows that this engine issued it (after validating it at acquire).
    const target = decoded.signed ? decoded.target : this.parseAcquire({ ...flattenTarget(decoded.target), mode: decoded.mode, owner: 'token' }).target;
    return { ...decoded, keys: planKeys(target, decoded.mode) };
  }

  /**
   * Reads the lease's documents and checks the token's secret; throws LeaseTokenMismatchError before
   * any write. A key that looks lost is confirmed by the primary: a copy cut off from the cluster may
   * not have seen our latest write.
   */
  private async readOwned(token: DecodedToken & { keys: PlannedKey[] }): Promise<{ owned: StoredLock[]; missingKeys: string[] }> {
    const found = await this.store.read(token.keys.map((key) => key.docId));
    const holds = (lock: StoredLock | null | undefined): boolean => lock?.body.holders.some((holder) => holder.lease === token.leaseId) ?? false;
    const doubtful = token.keys.filter((key) => !holds(found.get(key.docId)));
    if (doubtful.length > 0) {
      const confirmed = await this.store.readPrimary(doubtful.map((key) => key.docId));
      for (const [docId, lock] of confirmed) found.set(docId, lock);
    }
    const owned: StoredLock[] = [];
    const missingKeys: string[] = [];
    for (const key of token.keys) {
      const lock = found.get(key.docId);
      const mine = lock?.body.holders.find((holder) => holder.lease === token.leaseId);
      if (!lock || !mine) {
        missingKeys.push(key.key);
        continue;
      }
      if (!proofMatches(mine.proof, token.leaseId, token.secret)) throw new LeaseTokenMismatchError(token.leaseId);
      owned.push(lock);
    }
    return { owned, missingKeys };
  }

  /**
   * Extends every key of the lease to (the time of this call) + ttlMs, the one expiry it answers.
   * Throws LeaseLostError if any key is no longer held.
   */
  async renew(input: { leaseToken: string; ttlMs?: number }): Promise<Renewal> {
    const { leaseToken, ttlMs } = parseWith(this.renewSchema, input);
    const token = this.decode(leaseToken);
    // Computed once: a key extended in an early round must not be reported as ending later than it does.
    const expiresAt = this.settings.now() + ttlMs;
    let { owned, missingKeys } = await this.readOwned(token);
    const written = new Map<string, StoredLock>();
    // A renewal keeps a lease alive: like a release it gets three times the budget of an acquire.
    const giveUpAt = this.settings.now() + 3 * this.settings.contentionBudgetMs;
    for (let round = 0; ; round++) {
      if (missingKeys.length > 0) throw new LeaseLostError(token.leaseId, missingKeys);
      if (round > 0 && this.settings.now() > giveUpAt) throw new LockContentionError(owned.map((lock) => lock.body.key), round);
      const now = this.settings.now();
      const ops = owned.map((lock) => {
        const holders = settleFences(lock).map((holder) => (holder.lease === token.leaseId ? { ...holder, expiresAt } : holder));
        return {
          kind: 'replace',
          docId: lock.docId,
          body: lockDocument({ ...lock.body, docId: lock.docId }, holders, now),
          ifSeqNo: lock.seqNo,
          ifPrimaryTerm: lock.primaryTerm,
        } satisfies WriteOp;
      });
      const outcomes = await this.store.write(ops);
      const changed: string[] = [];
      outcomes.forEach((outcome, index) => {
        const op = ops[index]!;
        if (outcome.ok) written.set(op.docId, { docId: op.docId, seqNo: outcome.seqNo, primaryTerm: outcome.primaryTerm, index: outcome.index, body: op.body });
        else if (outcome.reason === 'error') throw outcome.error;
        else changed.push(op.docId);
      });
      if (changed.length === 0) {
        const locks = token.keys.map((key) => written.get(key.docId)!);
        const mine = locks.map((lock) => lock.body.holders.find((holder) => holder.lease === token.leaseId)!);
        const fences = locks.map((lock, index) => fenceOf(mine[index]!, lock));
        const earliest = Math.min(...mine.map((holder) => holder.expiresAt));
        return {
          leaseToken: this.token(token.leaseId, token.secret, token.target, token.mode, locks.map(hintFor), earliest),
          leaseId: token.leaseId,
          fencingToken: maxFencingToken(fences),
          expiresAt: earliest,
          ttlMs,
        };
      }
      // Another holder of a shared document wrote in between; our earlier writes in this call stand.
      await contentionPause(round);
      ({ owned, missingKeys } = await this.readOwned({ ...token, keys: token.keys.filter((key) => changed.includes(key.docId)) }));
    }
  }

  /**
   * Gives the lease up on every key. Releasing something already gone is an outcome, not an error;
   * a token whose secret does not match the lease changes nothing and throws LeaseTokenMismatchError.
   */
  async release(input: { leaseToken: string }): Promise<Release> {
    const { leaseToken } = parseWith(releaseSchema, input);
    const token = this.decode(leaseToken);
    const now = this.settings.now();
    let remaining = token.keys;
    // Past its end when released: for a document deleted on the fast path the token's own expiry is
    // exact (the document was as the token's write left it); for the others the documents say.
    let expired = false;

    // Signed token, and we were alone on every document at our last write: each document is exactly as
    // that write left it (then deleting it releases only us), or its delete fails and we read it.
    const hints = new Map(token.hints.map((hint) => [hint.docId, hint]));
    if (token.signed && token.keys.every((key) => hints.get(key.docId)?.sole)) {
      const outcomes = await this.store.write(
        token.keys.map((key) => {
          const hint = hints.get(key.docId)!;
          // Aimed at the incarnation the hint was made in: in a re-created index the same (seq_no, term) names someone else's lock.
          return { kind: 'delete', docId: key.docId, ifSeqNo: hint.seqNo, ifPrimaryTerm: hint.primaryTerm, index: hint.index } satisfies WriteOp;
        }),
      );
      remaining = token.keys.filter((_, index) => !outcomes[index]!.ok);
      if (remaining.length < token.keys.length && token.expiresAt !== undefined && token.expiresAt <= now) expired = true;
    }

    let missing: string[] = [];
    if (remaining.length > 0) {
      const { owned, missingKeys } = await this.readOwned({ ...token, keys: remaining });
      const nowAfterRead = this.settings.now();
      expired ||= owned.some((lock) => lock.body.holders.some((holder) => holder.lease === token.leaseId && holder.expiresAt <= nowAfterRead));
      const result = await this.removeLease(owned, token.leaseId);
      missing = [...missingKeys, ...result.missing];
    }
    return {
      leaseId: token.leaseId,
      outcome: missing.length === token.keys.length ? 'not_held' : missing.length > 0 ? 'partially_held' : expired ? 'expired' : 'released',
      releasedKeys: token.keys.map((key) => key.key).filter((key) => !missing.includes(key)),
      missingKeys: missing,
    };
  }

  /** Who holds each key of a target now (realtime). Keys nobody holds are left out. */
  async inspect(target: LockTarget, mode: RequestedMode = 'exclusive'): Promise<LockState[]> {
    const request = this.parseAcquire({ ...flattenTarget(target), mode, owner: 'inspect' });
    const keys = planKeys(request.target, request.mode);
    const found = await this.store.read(keys.map((key) => key.docId));
    const now = this.settings.now();
    return keys.flatMap((key) => {
      const lock = found.get(key.docId);
      return lock ? [toState(lock, now, this.settings.maxClockSkewMs)] : [];
    });
  }

  /** Locks by namespace, owner or path prefix. Backed by search: reflects writes after the index refreshes (about a second). */
  async list(query: Partial<ListQuery> & { includeExpired?: boolean } = {}): Promise<LockState[]> {
    const now = this.settings.now();
    const skew = this.settings.maxClockSkewMs;
    const locks = await this.store.list({
      ...query,
      limit: Math.min(Math.max(query.limit ?? 100, 1), 1_000),
      ...(query.includeExpired ? {} : { liveAfter: now - skew }),
    });
    return locks
      .map((lock) => toState(lock, now, skew))
      .map((state) => ({ ...state, holders: state.holders.filter((holder) => query.includeExpired || !holder.expired) }))
      .filter((state) => state.holders.length > 0 && (!query.owner || state.holders.some((holder) => holder.owner === query.owner)));
  }

  /**
   * Deletes expired locks and prunes expired holders from shared ones, in batches. Every write is
   * conditioned on the version it read, so a lock renewed meanwhile is skipped (counted as a conflict).
   */
  async sweep(options: { batchSize?: number; maxBatches?: number } = {}): Promise<SweepReport> {
    const batchSize = options.batchSize ?? this.settings.sweep.batchSize;
    const maxBatches = options.maxBatches ?? this.settings.sweep.maxBatches;
    const report: SweepReport = { scanned: 0, deletedLocks: 0, prunedHolders: 0, conflicts: 0, batches: 0 };
    let cursor: unknown;
    while (report.batches < maxBatches) {
      const now = this.settings.now();
      const page = await this.store.findExpired(now - this.settings.maxClockSkewMs, batchSize, cursor);
      if (page.locks.length === 0) break;
      report.batches++;
      report.scanned += page.locks.length;
      const ops: Array<{ op: WriteOp; pruned: number }> = [];
      for (const lock of page.locks) {
        const live = settleFences(lock).filter((holder) => isLive(holder, now, this.settings.maxClockSkewMs));
        const pruned = lock.body.holders.length - live.length;
        if (pruned === 0) continue;
        ops.push({
          op:
            live.length === 0
              ? { kind: 'delete', docId: lock.docId, ifSeqNo: lock.seqNo, ifPrimaryTerm: lock.primaryTerm }
              : { kind: 'replace', docId: lock.docId, body: lockDocument({ ...lock.body, docId: lock.docId }, live, now), ifSeqNo: lock.seqNo, ifPrimaryTerm: lock.primaryTerm },
          pruned,
        });
      }
      if (ops.length > 0) {
        const outcomes = await this.store.write(ops.map((entry) => entry.op));
        outcomes.forEach((outcome, index) => {
          const { op, pruned } = ops[index]!;
          if (!outcome.ok && outcome.reason === 'error' && outcome.error instanceof StoreRejectedError) throw outcome.error;
          if (!outcome.ok) report.conflicts++;
          else {
            report.prunedHolders += pruned;
            if (op.kind === 'delete') report.deletedLocks++;
          }
        });
      }
      if (page.next === undefined) break;
      cursor = page.next;
    }
    return report;
  }
}

function hintFor(lock: StoredLock): WriteHint {
  return { docId: lock.docId, seqNo: lock.seqNo, primaryTerm: lock.primaryTerm, index: lock.index, sole: lock.body.holders.length === 1 };
}

/** What makes two acquires the same call: target, mode and owner (ids in any order). */
function callFingerprint(request: AcquireRequest): string {
  const { target } = request;
  const key = target.granularity === 'document' ? [...target.ids].sort() : target.granularity === 'tree' ? target.path : '*';
  return createHash('sha256')
    .update(JSON.stringify([target.namespace, target.granularity, key, request.mode, request.owner]))
    .digest('base64url')
    .slice(0, 22);
}

function toState(lock: StoredLock, now: number, skewMs: number): LockState {
  return { key: lock.body.key, granularity: lock.body.granularity, namespace: lock.body.namespace, holders: holderViews(lock, now, skewMs) };
}

function flattenTarget(target: LockTarget): Record<string, unknown> {
  return {
    namespace: target.namespace,
    granularity: target.granularity,
    ...(target.granularity === 'document' ? { ids: target.ids } : {}),
    ...(target.granularity === 'tree' ? { path: target.path } : {}),
  };
}

function isAcquireRequest(input: unknown): input is AcquireRequest {
  return typeof input === 'object' && input !== null && 'target' in input;
}

/** An AcquireRequest built in code goes through the same validation as a raw request body. */
function flattenAcquire(request: AcquireRequest): Record<string, unknown> {
  return {
    ...flattenTarget(request.target),
    mode: request.mode,
    owner: request.owner,
    ttlMs: request.ttlMs,
    waitMs: request.waitMs,
    ...(request.requestId !== undefined ? { requestId: request.requestId } : {}),
  };
}
