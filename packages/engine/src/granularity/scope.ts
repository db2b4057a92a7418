/**
 * What a lock checks beyond its own documents (docs/tree-locks.md). The granularities nest: a
 * namespace's global lock is the root above its document ids and its tree paths, and a tree path is
 * below its ancestors. A lock writes only its own documents. Once that write is acknowledged, it
 * reads the documents above it from the primary (a lock up there in an incompatible mode blocks it)
 * and, if its document has ever had locks below it, searches for live ones below and waits for
 * incompatible ones to end. Both sides write first and read after, so of a lock above and one below
 * at least one sees the other. Writers that only share what is above them never write the same
 * document: a hot directory, or a namespace's root under its document locks, costs them nothing.
 */
import { compatible, intentionMode, targetMode } from '../compatibility.js';
import { lockDocId } from '../doc-id.js';
import { LockContentionError, LockHeldError, StoreUnavailableError } from '../errors.js';
import { compareFencingTokens, tokenAt, type WritePosition } from '../fencing.js';
import { fenceOf, isLive, lockDocument, replaceOp, settleFences, writtenLock } from '../lock-document.js';
import type { ConflictingKey, Granularity, HolderMode, PlannedKey, RequestedMode, StoredHolder } from '../model.js';
import type { EngineContext } from '../operations/context.js';
import type { StoredLock, WriteOp } from '../store.js';
import { contentionPause, writeUntilSettled } from '../write-loop.js';
import type { Above, HeldTarget, TargetBase } from './rules.js';

export type { Above } from './rules.js';

/** How a holder of a path looks from an ancestor: a lock below `/a` is an intention on `/a`. */
const asSeenFromAbove = (mode: HolderMode): HolderMode => (mode === 'X' || mode === 'IX' ? 'IX' : 'IS');

export interface ScopeHold {
  namespace: string;
  /** What is locked, for messages. */
  label: string;
  mode: RequestedMode;
  ttlMs: number;
  leaseId: string;
  /** The target's own documents, each holding our lease, as our last write (or read) left them. */
  locks: StoredLock[];
  /** The documents above the target (tree ancestors, then the root), each taken in our intention mode. */
  above: Above[];
  /**
   * Where locks below the target live, when it can have any: under a tree path, or (no path) anywhere
   * in the namespace, for its global lock. Searched only once the target's document is marked `lockedBelow`.
   */
  below?: { path?: string };
  /** Until when locks below may be waited for (the acquire's `waitMs`, or a short grace for ones about to back off). */
  waitBelowUntil: number;
  /**
   * The caller asked for no wait: only locks below granted within the grace are waited for (they
   * are likely acquires that will see us and back off); an established one refuses us at once,
   * rather than keep every lock below out while we wait for nothing.
   */
  graceOnlyMs?: number;
  /** The documents above as the primary had them right after `locks` were written (same request): saves the first read. */
  aboveRead?: Map<string, StoredLock | null>;
}

/** The hold a granularity's check starts from: what the acquire holds, what is above it, and where locks below it live. */
export function scopeHold<T extends TargetBase>(
  context: EngineContext,
  held: HeldTarget<T>,
  label: string,
  above: Above[],
  below?: { path?: string },
): ScopeHold {
  const { settings } = context;
  // Locks below that saw us back off within a round trip or two: worth a short wait even when the caller wants none.
  const grace = settings.retry.maxDelayMs / 4;
  return {
    namespace: held.target.namespace,
    label,
    mode: held.mode,
    ttlMs: held.ttlMs,
    leaseId: held.leaseId,
    locks: held.locks,
    above,
    ...(below ? { below } : {}),
    ...(held.guardsRead ? { aboveRead: held.guardsRead } : {}),
    waitBelowUntil: Math.max(held.deadline, settings.now() + grace),
    ...(held.deadline <= settings.now() ? { graceOnlyMs: grace } : {}),
  };
}

/** A search that does not show our own acknowledged write came from a copy that lags: ask again, a few times. */
const SEARCH_ATTEMPTS = 5;
/** Waiting for the scheduled refresh (settings.scheduledRefreshMs): searches per refresh interval. */
const SCHEDULED_POLLS_PER_INTERVAL = 4;

/**
 * Returns our documents as they stand when the lock may be granted. Each one's fencing token is our
 * last insertion there, and after it a read of everything above from the primary showed neither a
 * blocking holder nor a version newer than that token; when something above is newer we insert
 * ourselves again and read again. So any conflicting lock that ended before ours has a smaller token:
 * one above us wrote its version before our read, one below us read what is above it before our first write.
 */
export async function confirmScope(context: EngineContext, hold: ScopeHold): Promise<StoredLock[]> {
  const { settings } = context;
  const giveUpAt = Math.max(settings.now() + settings.contentionBudgetMs, hold.waitBelowUntil);
  let locks = hold.locks;
  let aboveRead = hold.aboveRead;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0 && settings.now() > giveUpAt) {
      throw new StoreUnavailableError(
        {
          operation: 'acquire',
        },
        `The acquire of ${hold.label} kept stalling past its own lease while checking around it. Retry.`,
      );
    }
    if (attempt > 0) locks = await rewriteAll(context, hold, locks, 'reissue');
    for (let round = 0; ; round++) {
      const newestAbove = await checkAbove(context, hold, aboveRead);
      aboveRead = undefined;
      const older = (lock: StoredLock): boolean =>
        newestAbove !== undefined && compareFencingTokens(fenceOf(ourHolder(lock, hold.leaseId), lock), newestAbove) <= 0;
      if (!locks.some(older)) break;
      if (round > 0 && settings.now() > giveUpAt) throw new LockContentionError({ keys: hold.above.map((entry) => entry.key), rounds: round });
      locks = await Promise.all(locks.map((lock) => (older(lock) ? rewriteOurHolder(context, hold, lock, 'reissue') : lock)));
    }
    // Waiting ends with our own lease at the latest: we then insert ourselves again and look again.
    const [own] = locks;
    if (hold.below && own?.body.lockedBelow === true && (await waitForLocksBelow(context, hold, own, hold.below)) === 'lapsed') continue;
    // The checks count only if our holders were live throughout: only our own writes change their
    // expiry, so they were, from their insertion until now, if now is still before the earliest expiry.
    const expiresAt = Math.min(...locks.map((lock) => ourHolder(lock, hold.leaseId).expiresAt));
    if (settings.now() >= expiresAt) continue;
    if (expiresAt - settings.now() >= hold.ttlMs / 2) return locks;
    // A long wait for the locks below used up much of the lease: a grant starts with at least half a
    // TTL. The extension keeps the tokens only if it landed before the lease ran out.
    locks = await rewriteAll(context, hold, locks, 'extend');
    if (settings.now() < expiresAt) return locks;
  }
}

const rewriteAll = (context: EngineContext, hold: ScopeHold, locks: StoredLock[], change: 'reissue' | 'extend'): Promise<StoredLock[]> =>
  Promise.all(locks.map((lock) => rewriteOurHolder(context, hold, lock, change)));

function ourHolder(lock: StoredLock, leaseId: string): StoredHolder {
  const mine = lock.body.holders.find((holder) => holder.lease === leaseId);
  if (!mine) throw new StoreUnavailableError({ operation: 'acquire' }, `Our lease left ${lock.body.key} while the acquire was checking around it`);
  return mine;
}

function conflictOf(
  key: string,
  granularity: Granularity,
  requestedMode: HolderMode,
  holders: StoredHolder[],
  now: number,
  skewMs: number,
): { conflict: ConflictingKey; clearsAt: number } {
  return {
    conflict: { key, granularity, requestedMode, holders: holders.map(({ owner, mode, expiresAt }) => ({ owner, mode, expiresAt })) },
    clearsAt: Math.max(now, ...holders.map((holder) => holder.expiresAt + skewMs)),
  };
}

function heldError(context: EngineContext, found: Array<{ conflict: ConflictingKey; clearsAt: number }>, now: number): LockHeldError {
  const { settings } = context;
  const clearsAt = Math.max(...found.map((entry) => entry.clearsAt));
  return new LockHeldError({
    conflicts: found.map((entry) => entry.conflict),
    retryAfterMs: Math.max(settings.retry.baseDelayMs, Math.min(settings.maxRetryAfterMs, clearsAt - now)),
  });
}

/**
 * Reads everything above from the primary after our write: a live holder there whose mode does not
 * admit our intention blocks us. A document above not yet marked `lockedBelow` gets the mark (a
 * conditional write, once per directory and per namespace root), so that a later lock on it searches
 * below. Returns the newest version seen above, as a fencing token.
 */
async function checkAbove(context: EngineContext, hold: ScopeHold, readAlong?: Map<string, StoredLock | null>): Promise<string | undefined> {
  const { store, settings } = context;
  if (hold.above.length === 0) return undefined;
  const intention = intentionMode(hold.mode);
  const keys: PlannedKey[] = hold.above.map(({ granularity, key }) => ({
    docId: lockDocId(hold.namespace, granularity, key),
    namespace: hold.namespace,
    granularity,
    key,
    mode: intention,
  }));
  let known = readAlong && keys.every((key) => readAlong.has(key.docId)) ? readAlong : await store.readPrimary(keys.map((key) => key.docId));
  let newest: string | undefined;
  const observe = (position: WritePosition): void => {
    const token = tokenAt(position);
    if (newest === undefined || compareFencingTokens(token, newest) > 0) newest = token;
  };
  await writeUntilSettled(context, settings.contentionBudgetMs, keys, {
    decide: (pending, now) => {
      const blocked: Array<{ conflict: ConflictingKey; clearsAt: number }> = [];
      const writes: Array<{ item: PlannedKey; op: WriteOp }> = [];
      for (const key of pending) {
        const lock = known.get(key.docId) ?? null;
        const blocking =
          lock?.body.holders.filter(
            (holder) => holder.lease !== hold.leaseId && isLive(holder, now, settings.maxClockSkewMs) && !compatible(intention, holder.mode),
          ) ?? [];
        // Passed only because they ran out: we write the document (dropping them) rather than only read it,
        // so that a release of theirs landing after us, on the version we read, cannot clear the mark under us.
        const ranOut =
          lock?.body.holders.filter(
            (holder) => holder.lease !== hold.leaseId && !isLive(holder, now, settings.maxClockSkewMs) && !compatible(intention, holder.mode),
          ) ?? [];
        if (blocking.length > 0) blocked.push(conflictOf(key.key, key.granularity, intention, blocking, now, settings.maxClockSkewMs));
        else if (lock?.body.lockedBelow && ranOut.length > 0) {
          const live = settleFences(lock).filter((holder) => !ranOut.some((gone) => gone.lease === holder.lease));
          writes.push({ item: key, op: replaceOp(lock, { ...lock.body, docId: lock.docId }, live, now, settings, true) });
        } else if (lock?.body.lockedBelow) observe(lock);
        else
          writes.push({
            item: key,
            op: lock
              ? replaceOp(lock, { ...lock.body, docId: lock.docId }, settleFences(lock), now, settings, true)
              : { kind: 'create', docId: key.docId, body: lockDocument(key, [], now, true) },
          });
      }
      if (blocked.length > 0) throw heldError(context, blocked, now);
      return writes;
    },
    // The mark went in on a version without a blocking holder: that write is our look at this ancestor.
    applied: (_, outcome) => observe(outcome),
    reread: async (changed) => {
      known = await store.readPrimary(changed.map((key) => key.docId));
      return changed;
    },
    resolveLost: async (notApplied) => {
      known = await store.readPrimary(notApplied.map((key) => key.docId));
      return notApplied;
    },
    keysOf: (pending) => pending.map((key) => key.key),
  });
  return newest;
}

/**
 * Our path has had locks below it. A refresh makes every write acknowledged so far searchable; a lock
 * below acknowledged later reads our document after its write and backs off. So the search finds
 * every lock below that could be granted without seeing us, and we wait (re-reading only those, from
 * the primary) until none of them blocks.
 */
async function waitForLocksBelow(context: EngineContext, hold: ScopeHold, own: StoredLock, where: { path?: string }): Promise<'drained' | 'lapsed'> {
  const { store, settings } = context;
  const mode = targetMode(hold.mode);
  const skew = settings.maxClockSkewMs;
  const blockingIn = (lock: StoredLock | null | undefined, now: number): StoredHolder[] =>
    lock?.body.holders.filter((holder) => isLive(holder, now, skew) && !compatible(mode, asSeenFromAbove(holder.mode))) ?? [];
  const conflictsOf = (locks: StoredLock[], now: number) =>
    locks.map((lock) => conflictOf(lock.body.key, lock.body.granularity, mode, blockingIn(lock, now), now, skew));

  // The search shows the index as our latest write (`own`) left it, or later, but need not show what
  // was written after that write (a copy that lags, a scheduled refresh). A holder below inserted
  // before it may have been renewed or extended since, by a write that does not look above: a lease is
  // extended only while it lives, so a holder live when `own` was written may still live though the
  // search shows its earlier expiry. So the search takes in every holder live then, and the primary
  // tells about those that look run out now (schedule 29157191).
  const writtenAt = Math.min(own.body.updatedAt, settings.now());
  let below: StoredLock[] | undefined;
  // Waiting for the scheduled refresh: a few polls per interval, for two intervals; then refreshes are forced.
  const interval = settings.scheduledRefreshMs;
  const polls = interval === undefined ? 0 : SCHEDULED_POLLS_PER_INTERVAL * 2;
  for (let attempt = 0; attempt < polls + SEARCH_ATTEMPTS && below === undefined; attempt++) {
    const scheduled = attempt < polls;
    const found = await store.findLiveBelow({
      namespace: hold.namespace,
      ...(where.path !== undefined ? { path: where.path } : {}),
      selfDocId: own.docId,
      liveAfter: writtenAt - skew,
      ...(scheduled ? { refresh: false } : {}),
    });
    // Only a copy that shows our own latest write (or a later one) has everything acknowledged before
    // it. Our lease alone is not enough: an earlier write of ours (before a reissue or an extension)
    // carries it too, and a copy cut off in between misses what other locks wrote meanwhile.
    const self = found.self;
    const current = self?.body.holders.some((holder) => holder.lease === hold.leaseId) === true && notBefore(self!, own);
    if (current) below = found.below;
    else if (scheduled) await settings.sleep(interval! / SCHEDULED_POLLS_PER_INTERVAL);
    else await contentionPause(settings, attempt - polls);
  }
  if (below === undefined) {
    throw new StoreUnavailableError(
      {
        operation: 'acquire',
      },
      `The search for locks below ${hold.label} kept answering from a copy that had not seen this acquire's write`,
    );
  }
  const searchedAt = settings.now();
  let blocking = below.filter((lock) => blockingIn(lock, searchedAt).length > 0);
  // Shown run out, but live when our write was made: only the primary tells whether it was extended since.
  const ranOut = below.filter((lock) => !blocking.includes(lock) && blockingIn(lock, writtenAt).length > 0);
  if (ranOut.length > 0) {
    const fresh = await store.readPrimary(ranOut.map((lock) => lock.docId));
    const at = settings.now();
    for (const lock of ranOut) {
      const current = fresh.get(lock.docId);
      if (current && blockingIn(current, at).length > 0) blocking.push(current);
    }
  }
  if (blocking.length === 0) return 'drained';
  if (hold.graceOnlyMs !== undefined) {
    const now = settings.now();
    const established = blocking.filter((lock) => blockingIn(lock, now).some((holder) => holder.grantedAt < now - hold.graceOnlyMs!));
    if (established.length > 0) throw heldError(context, conflictsOf(established, now), now);
  }
  const ourExpiry = ourHolder(own, hold.leaseId).expiresAt;
  for (let round = 0; ; round++) {
    const now = settings.now();
    if (now >= ourExpiry && now <= hold.waitBelowUntil) return 'lapsed';
    if (now > hold.waitBelowUntil) throw heldError(context, conflictsOf(blocking, now), now);
    await contentionPause(settings, Math.min(round + 1, 6));
    const fresh = await store.readPrimary(blocking.map((lock) => lock.docId));
    const at = settings.now();
    blocking = blocking.flatMap((lock) => {
      const current = fresh.get(lock.docId);
      return current && blockingIn(current, at).length > 0 ? [current] : [];
    });
    if (blocking.length === 0) return 'drained';
  }
}

/** Whether `copy` is the version `ours` wrote or a later one: (primary term, seq_no) in order. */
const notBefore = (copy: WritePosition, ours: WritePosition): boolean =>
  copy.primaryTerm > ours.primaryTerm || (copy.primaryTerm === ours.primaryTerm && copy.seqNo >= ours.seqNo);

/**
 * Both give our holder a full TTL from now. `reissue` also inserts it again, so that its fencing
 * token comes from this write; `extend` keeps the token. Conditional on the version we know; re-read from the primary when
 * a shared holder wrote meanwhile.
 */
async function rewriteOurHolder(context: EngineContext, hold: ScopeHold, known: StoredLock, change: 'reissue' | 'extend'): Promise<StoredLock> {
  const { store, settings } = context;
  let current = known;
  let done = false;
  await writeUntilSettled(context, settings.contentionBudgetMs, [known.docId], {
    decide: (_, now) => {
      if (done) return [];
      const holders = settleFences(current).map((holder) =>
        holder.lease !== hold.leaseId
          ? holder
          : { ...holder, expiresAt: Math.max(holder.expiresAt, now + hold.ttlMs), ...(change === 'reissue' ? { fence: null, grantedAt: now } : {}) },
      );
      return [{ item: current.docId, op: replaceOp(current, { ...current.body, docId: current.docId }, holders, now, settings) }];
    },
    applied: (_, outcome, op) => {
      done = true;
      current = writtenLock(outcome, (op as Extract<WriteOp, { kind: 'replace' }>).body);
    },
    reread: async (changed) => {
      const read = (await store.readPrimary(changed)).get(current.docId);
      if (!read) throw new StoreUnavailableError({ operation: 'acquire' }, `${hold.label} was deleted while the acquire was taking it`);
      current = read;
      ourHolder(current, hold.leaseId);
      return changed;
    },
    // Whether it landed or not, the primary's version is the one to go on from: a reissue that landed
    // shows as our holder inserted by the latest write (the caller compares again), an extension as its expiry.
    resolveLost: async (notApplied) => {
      const read = (await store.readPrimary(notApplied)).get(current.docId);
      if (!read) throw new StoreUnavailableError({ operation: 'acquire' }, `${hold.label} was deleted while the acquire was taking it`);
      current = read;
      const mine = ourHolder(current, hold.leaseId);
      done = change === 'reissue' ? mine.fence === null && current.seqNo !== known.seqNo : mine.expiresAt - settings.now() >= hold.ttlMs / 2;
      return done ? [] : notApplied;
    },
    keysOf: () => [known.body.key],
  });
  return current;
}
