/**
 * Acquire: take every key of the target in its planned mode, or none. A free exclusive key costs one
 * create; anything with holders is read first and written conditionally on what was read.
 */
import { hash } from 'node:crypto';
import { allExclusive } from '../compatibility.js';
import { FencingRangeError, LockContentionError, LockHeldError, LockOutcomeUnknownError, StoreUnavailableError } from '../errors.js';
import { encodable, maxFencingToken } from '../fencing.js';
import { describeTarget, type GranularityRules, rulesFor } from '../granularity/index.js';
import { lockDocId, planKeys } from '../keys.js';
import { encodeToken, hintFor, type NewLease, newLease } from '../lease-token.js';
import { type Claim, decideAcquire, fenceOf, isLive, noteOf, writtenLock } from '../lock-document.js';
import type { AcquireRequest, ConflictingKey, Grant, Granularity, PlannedKey, Queued, StoredTicket } from '../model.js';
import type { BelowQuery, ListQuery, LockStore, StoredLock, WriteOp } from '../store.js';
import { type WritePlan, writeUntilSettled } from '../write-loop.js';
import type { EngineContext } from './context.js';
import { leaveQueue, queuedOutcome, waitForReservation } from './queue-wait.js';
import { rollback } from './remove-lease.js';
import { blockedOnlyAbove, watchAbove } from './watch-above.js';

interface HeldKey {
  key: PlannedKey;
  lock: StoredLock;
  /** Taken over from an earlier call with the same requestId. */
  reused: boolean;
}

/**
 * How an acquire waits. `queue`: a single-key acquire that may wait joins the lock's queue and is
 * served in order (in this call until `waitMs`, or through its wake channel); others retry with
 * jittered backoff until the deadline, and never overtake a queued waiter.
 */
interface Waiting {
  deadline: number;
  /** The ticket's own lease end, when the acquire queues. */
  queueUntil?: number;
}

/** Tries until granted, refused for good, or `waitMs` has passed: in the queue for a single key, with backoff otherwise. */
export async function acquire(context: EngineContext, request: AcquireRequest): Promise<Grant> {
  return (await acquireOrQueue(context, request)) as Grant;
}

/**
 * An acquire with a wake channel answers at once, queued: its ticket is reserved at once when the lock
 * is free, or when the lock is handed over, and the channel is then woken to claim it (the same
 * acquire again, without `wake`). Only that claim grants: a wake-up is a hint.
 */
export async function acquireOrQueue(context: EngineContext, request: AcquireRequest): Promise<Grant | Queued> {
  const { settings } = context;
  const keys = planKeys(request.target, request.mode);
  const started = settings.now();
  const deadline = started + request.waitMs;
  // A waiter in the call keeps looking until everyone sees its ticket run out (its end plus the clock
  // skew allowance): it can then never be handed the lock after it gave up.
  const queueUntil = request.wake ? started + (request.queueTtlMs ?? settings.queue.ticketTtlMs.defaultMs) : deadline - settings.maxClockSkewMs;
  const queues = keys.length === 1 && (request.wake !== undefined || (request.waitMs > 0 && queueUntil > started));
  for (let attempt = 0; ; attempt++) {
    try {
      // A lease of its own per attempt: a copy that lags behind can then never show an earlier
      // attempt's holder, rolled back since, as a holder of this one.
      return await attemptOnce(context, request, keys, newLease(), { deadline, ...(queues ? { queueUntil } : {}) });
    } catch (error) {
      if (!(error instanceof LockHeldError || error instanceof LockContentionError)) throw error;
      const remaining = deadline - settings.now();
      if (remaining <= 0) {
        if (error instanceof LockHeldError && request.waitMs > 0) {
          throw new LockHeldError(undefined, {
            conflicts: error.conflicts,
            retryAfterMs: error.retryAfterMs,
            waitedMs: settings.now() - started,
            cause: error,
          });
        }
        throw error;
      }
      if (error instanceof LockHeldError && settings.retry.watchAbove && blockedOnlyAbove(request.target, error.conflicts)) {
        await watchAbove(context, request.target.namespace, error.conflicts, deadline);
        continue;
      }
      // Exponential backoff with full jitter (anywhere from 0 to the ceiling): waiters that met the same
      // holder spread out over the whole interval instead of coming back together in its second half.
      const ceiling = Math.min(settings.retry.maxDelayMs, settings.retry.baseDelayMs * 2 ** attempt);
      const hinted = error instanceof LockHeldError ? error.retryAfterMs : ceiling;
      await settings.sleep(Math.max(1, Math.min(remaining, Math.min(ceiling, hinted) * Math.random())));
    }
  }
}

async function attemptOnce(outer: EngineContext, request: AcquireRequest, keys: PlannedKey[], lease: NewLease, waiting: Waiting): Promise<Grant | Queued> {
  const { deadline } = waiting;
  const counted = new CountingStore(outer.store);
  const context: EngineContext = { ...outer, store: counted };
  const { store, settings } = context;
  const skew = settings.maxClockSkewMs;
  const held = new Map<string, HeldKey>();
  const call = request.requestId === undefined ? null : callFingerprint(request);
  const ours = (lock: StoredLock | null | undefined): lock is StoredLock => lock?.body.holders.some((holder) => holder.lease === lease.leaseId) ?? false;
  const keep = (key: PlannedKey, lock: StoredLock, reused: boolean): void =>
    void held.set(key.docId, { key, lock, reused: reused || (held.get(key.docId)?.reused ?? false) });
  const reusedIn = new Set<string>();
  // Where the primary showed our lease only in a note: a later delivery of the call took over what
  // a write of ours (its answer lost) inserted. If we fail, our rollback clears the note, or that
  // delivery, failing too, would give the key back to this attempt's lease, which nobody holds.
  const notedIn = new Map<string, StoredLock>();
  // A plain read may come from a copy that lags: one that shows our lease counts only once the primary confirms it.
  const readConfirmed = async (docIds: string[]): Promise<Map<string, StoredLock | null>> => {
    const found = await store.read(docIds);
    const claimed = docIds.filter((docId) => ours(found.get(docId)));
    if (claimed.length > 0) for (const [docId, lock] of await store.readPrimary(claimed)) found.set(docId, lock);
    return found;
  };
  let latestExpiry = 0;
  let unresolved = false;
  // Read along with our writes (tree: the ancestors), valid while it came after our last write.
  const rules = rulesFor(request.target.granularity);
  const guards = rules.guards?.(request.target as never).map(({ granularity, key }) => lockDocId(request.target.namespace, granularity, key)) ?? [];
  let guardsRead: Map<string, StoredLock | null> | undefined;
  let known = new Map<string, StoredLock | null>();
  // The document our ticket waits in (queueing acquires), as our last look at it left it.
  let queuedIn: StoredLock | undefined;
  let queuedTicket: StoredTicket | undefined;
  let joined = false;
  try {
    known = allExclusive(keys) ? new Map<string, StoredLock | null>() : await store.read(keys.map((key) => key.docId));
    // Methods rather than arrow functions: the bundle names every named arrow function as it is made
    // (esbuild keepNames: a defineProperty, about 0.3 µs each), and not methods.
    const plan: WritePlan<PlannedKey> = {
      decide(pending, now) {
        const claim: Claim = {
          leaseId: lease.leaseId,
          proof: lease.proof,
          owner: request.owner,
          requestId: request.requestId ?? null,
          call,
          expiresAt: now + request.ttlMs,
          ...(waiting.queueUntil !== undefined
            ? {
                queue: {
                  ticket: lease.leaseId,
                  owner: request.owner,
                  mode: keys[0]!.mode,
                  ttlMs: request.ttlMs,
                  expiresAt: waiting.queueUntil,
                  request: request.requestId ?? null,
                  call,
                  ...(request.wake ? { wake: request.wake } : {}),
                },
              }
            : {}),
        };
        const writes: Array<{ item: PlannedKey; op: WriteOp }> = [];
        const conflicts: ConflictingKey[] = [];
        let clearsAt = now;
        for (const key of pending) {
          // A call that already holds keys yields to a concurrent delivery of itself rather than split the set with it.
          const decision = decideAcquire(known.get(key.docId) ?? null, key, claim, now, settings, held.size === 0);
          if (decision.kind === 'conflict') {
            conflicts.push(decision.conflict);
            clearsAt = Math.max(clearsAt, decision.clearsAt);
          } else if (decision.kind === 'already-held') {
            keep(key, decision.lock, false);
          } else if (decision.kind === 'queued') {
            queuedTicket = decision.ticket;
            joined = true;
            const existing = known.get(key.docId);
            if (existing) queuedIn = existing;
            if (decision.op) writes.push({ item: key, op: decision.op });
          } else {
            if (decision.reused) reusedIn.add(key.docId);
            writes.push({ item: key, op: decision.op });
          }
        }
        if (conflicts.length > 0) {
          throw new LockHeldError(undefined, {
            conflicts,
            retryAfterMs: Math.max(settings.retry.baseDelayMs, Math.min(settings.maxRetryAfterMs, clearsAt - now)),
          });
        }
        if (writes.length > 0) latestExpiry = claim.expiresAt;
        return writes;
      },
      applied(key, outcome, op) {
        // A delete: our ticket joined and ran out in one write (its channel hears it failed).
        if (op.kind === 'delete') return;
        if (op.body.holders.some((holder) => holder.lease === lease.leaseId)) keep(key, writtenLock(outcome, op.body), reusedIn.has(key.docId));
        else queuedIn = writtenLock(outcome, op.body);
      },
      async reread(changed) {
        // A ticket that did not go in: a lagging copy would keep showing the version it was conditioned on, so the primary answers.
        known = joined ? await store.readPrimary(changed.map((key) => key.docId)) : await readConfirmed(changed.map((key) => key.docId));
        return changed;
      },
      // The primary tells what landed (a copy cut off from the cluster could say "not there" for a
      // write that did land); whatever holds our lease is ours to roll back if the call fails.
      async resolveLost(notApplied) {
        guardsRead = undefined;
        try {
          known = await store.readPrimary(notApplied.map((key) => key.docId));
        } catch (readError) {
          unresolved = true;
          throw readError;
        }
        for (const key of notApplied) {
          const lock = known.get(key.docId);
          if (ours(lock)) keep(key, lock, false);
          if (lock && !held.has(key.docId) && lock.body.holders.some((holder) => noteOf(holder.restores, lease.leaseId))) notedIn.set(key.docId, lock);
        }
        return notApplied;
      },
      keysOf(pending) {
        return pending.map((key) => key.key);
      },
      ...(guards.length > 0
        ? {
            alsoRead: guards,
            readAlong(read: Map<string, StoredLock | null>) {
              guardsRead = read;
            },
          }
        : {}),
    };
    await writeUntilSettled(context, settings.contentionBudgetMs, keys, plan);
    const [only] = keys;
    // Queued: a channel waiter hears it now (and is woken to claim); a waiter in the call looks until
    // the lock is reserved for it, then claims it with a conditional write on the version it saw.
    while (queuedTicket && only && !held.has(only.docId)) {
      if (request.wake) return queuedOutcome(request, queuedTicket, queuedIn);
      known = new Map([[only.docId, await waitForReservation(context, only, lease.leaseId, deadline, queuedIn)]]);
      queuedTicket = undefined;
      await writeUntilSettled(context, settings.contentionBudgetMs, keys, plan);
    }
    if (rules.confirm) await confirmScope(context, rules.confirm, request, keys, held, lease.leaseId, deadline, guardsRead);
    // Another delivery of this call may take a key over between two of our requests (and release it,
    // or fail and give it back): a grant confirmed from our own earlier writes rests on the primary's
    // word after the last of them. One request means nothing came between the write and the grant.
    if (request.requestId !== undefined && counted.requests > 1) await confirmStillOurs(context, keys, held, lease.leaseId);
    return confirmedGrant(context, request, keys, held, lease);
  } catch (error) {
    // A ticket we wrote may still wait: it leaves (best effort; one left behind lapses at its end, and
    // never became a holder: only a claim of ours makes one, which the rollback below removes).
    if (joined && keys[0]) await leaveQueue(context, keys[0], lease.leaseId).catch(() => undefined);
    throw await abandon(
      context,
      request,
      // What we hold, what the primary last showed holding our lease that was not yet counted (a key
      // given back to this attempt by a failed later delivery of its call, say), and the notes of us.
      [...held.values()]
        .map((entry) => entry.lock)
        .concat([...known.values()].filter((lock): lock is StoredLock => ours(lock) && !held.has(lock.docId)))
        .concat([...notedIn.values()].filter((lock) => !held.has(lock.docId) && !ours(known.get(lock.docId)))),
      lease.leaseId,
      error as Error,
      unresolved,
      latestExpiry + skew,
    );
  }
}

/**
 * The store, counting the requests of one attempt. A class rather than an object of arrow functions
 * made per attempt: the bundle keeps function names (esbuild keepNames), which costs every named
 * arrow function a defineProperty as it is made (about 0.3 µs); a class's methods are made once.
 */
class CountingStore implements LockStore {
  requests = 0;

  constructor(private readonly store: LockStore) {}

  private counted<T>(result: Promise<T>): Promise<T> {
    this.requests++;
    return result;
  }

  read(docIds: readonly string[]) {
    return this.counted(this.store.read(docIds));
  }
  readPrimary(docIds: readonly string[]) {
    return this.counted(this.store.readPrimary(docIds));
  }
  write(ops: readonly WriteOp[]) {
    return this.counted(this.store.write(ops));
  }
  writeThenRead(ops: readonly WriteOp[], docIds: readonly string[]) {
    return this.counted(this.store.writeThenRead(ops, docIds));
  }
  findExpired(before: number, size: number, after?: unknown) {
    return this.counted(this.store.findExpired(before, size, after));
  }
  list(query: ListQuery) {
    return this.counted(this.store.list(query));
  }
  findLiveBelow(query: BelowQuery) {
    return this.counted(this.store.findLiveBelow(query));
  }
}

/**
 * Reads every key from the primary: each must still hold our lease (a duplicate delivery that took it
 * over and gave it back leaves it as it was). Keeps the primary's versions; a key another delivery
 * holds, or left free, makes this delivery yield.
 */
async function confirmStillOurs(context: EngineContext, keys: PlannedKey[], held: Map<string, HeldKey>, leaseId: string): Promise<void> {
  const now = context.settings.now();
  const found = await context.store.readPrimary(keys.map((key) => key.docId));
  const lost: ConflictingKey[] = [];
  for (const key of keys) {
    const lock = found.get(key.docId);
    const entry = held.get(key.docId)!;
    if (lock?.body.holders.some((holder) => holder.lease === leaseId)) held.set(key.docId, { ...entry, lock });
    else {
      const holders = (lock?.body.holders ?? []).filter((holder) => isLive(holder, now, context.settings.maxClockSkewMs));
      lost.push({
        key: key.key,
        granularity: key.granularity,
        requestedMode: key.mode,
        holders: holders.map(({ owner, mode, expiresAt }) => ({ owner, mode, expiresAt })),
        reason: 'duplicate_in_progress',
      });
    }
  }
  if (lost.length > 0) throw new LockHeldError(undefined, { conflicts: lost, retryAfterMs: context.settings.retry.baseDelayMs });
}

/** What the granularity checks beyond the documents it wrote (tree: ancestors, locks below); may re-write them. */
async function confirmScope(
  context: EngineContext,
  confirm: NonNullable<GranularityRules<Granularity>['confirm']>,
  request: AcquireRequest,
  keys: PlannedKey[],
  held: Map<string, HeldKey>,
  leaseId: string,
  deadline: number,
  guardsRead: Map<string, StoredLock | null> | undefined,
): Promise<void> {
  const locks = keys.map((key) => held.get(key.docId)!.lock);
  const confirmed = await confirm(context, {
    target: request.target,
    mode: request.mode,
    ttlMs: request.ttlMs,
    leaseId,
    locks,
    deadline,
    ...(guardsRead ? { guardsRead } : {}),
  });
  confirmed.forEach((lock, index) => {
    const entry = held.get(keys[index]!.docId)!;
    held.set(entry.key.docId, { ...entry, lock });
  });
}

/**
 * Never a grant for a key this call may have lost: every key was written (or found) with our lease,
 * and no one can take a key over before its expiry (plus skew). If the call stalled so long that the
 * earliest of them is near its end, or a write landed beyond what a fencing token encodes, it is not a grant.
 */
function confirmedGrant(context: EngineContext, request: AcquireRequest, keys: PlannedKey[], held: Map<string, HeldKey>, lease: NewLease): Grant {
  for (const { lock } of held.values()) {
    const mine = lock.body.holders.find((holder) => holder.lease === lease.leaseId);
    if (mine?.fence === null && !encodable(lock)) {
      throw new FencingRangeError(
        `the lock index's write position (term ${lock.primaryTerm}, seq_no ${lock.seqNo}) is beyond what a fencing token encodes; create a new lock index`,
        {
          primaryTerm: lock.primaryTerm,
          seqNo: lock.seqNo,
        },
      );
    }
  }
  const grant = grantFrom(context, request, keys, held, lease);
  const left = grant.expiresAt - context.settings.now();
  if (left < request.ttlMs / 2) {
    throw new StoreUnavailableError(
      `The acquire of ${describeTarget(request.target)} stalled (the lock store or this process): its lease would have had ${Math.max(0, left)} ms of ${request.ttlMs} left, so it was rolled back. Retry.`,
      { operation: 'acquire' },
    );
  }
  return grant;
}

function grantFrom(context: EngineContext, request: AcquireRequest, keys: PlannedKey[], held: Map<string, HeldKey>, lease: NewLease): Grant {
  const granted = keys.map((key) => {
    const entry = held.get(key.docId)!;
    const mine = entry.lock.body.holders.find((holder) => holder.lease === lease.leaseId)!;
    return { key, entry, mine, fencingToken: fenceOf(mine, entry.lock) };
  });
  const expiresAt = Math.min(...granted.map(({ mine }) => mine.expiresAt));
  const served = granted.length === 1 ? granted[0]!.mine : undefined;
  const hints = granted.map(({ entry }) => hintFor(entry.lock));
  return {
    leaseToken: encodeToken(
      {
        leaseId: lease.leaseId,
        target: request.target,
        mode: request.mode,
        hints,
        expiresAt,
        grantedAt: Math.round(Math.min(...granted.map(({ mine }) => mine.grantedAt))),
      },
      lease.secret,
      context.settings.tokenSigningKey,
    ),
    leaseId: lease.leaseId,
    fencingToken: maxFencingToken(granted.map(({ fencingToken }) => fencingToken)),
    expiresAt,
    ttlMs: request.ttlMs,
    target: request.target,
    mode: request.mode,
    owner: request.owner,
    keys: granted.map(({ key, fencingToken }) => ({ key: key.key, mode: key.mode, fencingToken })),
    reused: granted.some(({ entry }) => entry.reused),
    ...(served?.ticket ? { waitedMs: Math.max(0, served.grantedAt - served.ticket.queuedAt) } : {}),
  };
}

/**
 * A failed acquire gives back whatever it took. When it cannot (the store is down) or cannot know
 * what it took (a write's answer was lost and the read-back failed), the caller must hear that it
 * may hold keys until `mayHoldUntil`, and that a retry with the same requestId recovers them.
 */
async function abandon(
  context: EngineContext,
  request: AcquireRequest,
  locks: StoredLock[],
  leaseId: string,
  error: Error,
  unresolved: boolean,
  mayHoldUntil: number,
): Promise<Error> {
  const clean = await rollback(context, locks, leaseId);
  const lost = error instanceof StoreUnavailableError && error.context.ambiguous;
  if (clean && !unresolved) {
    return lost
      ? new StoreUnavailableError(`The lock store failed twice during the acquire of ${describeTarget(request.target)}; nothing is held. Retry.`, {
          operation: 'acquire',
          cause: error,
        })
      : error;
  }
  const retry = request.requestId
    ? `Retry with the same requestId (${request.requestId}) to get it back.`
    : `Without a requestId a retry cannot claim it: the keys stay blocked until ${new Date(mayHoldUntil).toISOString()}.`;
  return new LockOutcomeUnknownError(
    `The acquire of ${describeTarget(request.target)} failed (${error.message}) and may still hold some of its keys. ${retry}`,
    { operation: 'acquire', ...(request.requestId ? { requestId: request.requestId } : {}), mayHoldUntil, cause: error },
  );
}

/** What makes two acquires the same call: target, mode and owner. */
function callFingerprint(request: AcquireRequest): string {
  const { target } = request;
  return hash(
    'sha256',
    JSON.stringify([target.namespace, target.granularity, rulesFor(target.granularity).identity(target), request.mode, request.owner]),
    'base64url',
  ).slice(0, 22);
}
