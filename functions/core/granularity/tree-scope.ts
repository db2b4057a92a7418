/**
 * What a tree lock checks beyond its own document (docs/tree-locks.md). A lock writes only the
 * document of its own path. Once that write is acknowledged, it reads its ancestors from the primary
 * (a lock up there in an incompatible mode blocks it) and, if its path has ever had locks below it,
 * searches for live ones below and waits for incompatible ones to end. Both sides write first and
 * read after, so of a lock on `/a` and one on `/a/b/c` at least one sees the other. Writers that only
 * share ancestors never write the same document: a hot directory costs them nothing.
 */
import { compatible, intentionMode, targetMode } from '../compatibility.js';
import { LockContentionError, LockHeldError, StoreUnavailableError } from '../errors.js';
import { compareFencingTokens, tokenAt, type WritePosition } from '../fencing.js';
import { lockDocId } from '../keys.js';
import { fenceOf, isLive, lockDocument, replaceOp, settleFences, writtenLock } from '../lock-document.js';
import type { ConflictingKey, HolderMode, PlannedKey, RequestedMode, StoredHolder } from '../model.js';
import type { EngineContext } from '../operations/context.js';
import type { StoredLock, WriteOp } from '../store.js';
import { contentionPause, writeUntilSettled } from '../write-loop.js';

/** `/a/b/c` → `/a`, `/a/b` (the root is not a lock: use the global granularity). */
export function ancestorsOf(path: string): string[] {
  const segments = path.slice(1).split('/');
  return segments.slice(0, -1).map((_, index) => `/${segments.slice(0, index + 1).join('/')}`);
}

/** How a holder of a path looks from an ancestor: a lock below `/a` is an intention on `/a`. */
const asSeenFromAbove = (mode: HolderMode): HolderMode => (mode === 'X' || mode === 'IX' ? 'IX' : 'IS');

export interface ScopeHold {
  namespace: string;
  path: string;
  mode: RequestedMode;
  ttlMs: number;
  leaseId: string;
  /** The path's own document, holding our lease, as our last write (or read) left it. */
  lock: StoredLock;
  /** Until when locks below may be waited for (the acquire's `waitMs`, or a short grace for ones about to back off). */
  waitBelowUntil: number;
  /**
   * The caller asked for no wait: only locks below granted within the grace are waited for (they
   * are likely acquires that will see us and back off); an established one refuses us at once,
   * rather than keep every lock below out while we wait for nothing.
   */
  graceOnlyMs?: number;
  /** The ancestors as the primary had them right after `lock` was written (same request): saves the first read. */
  ancestorsRead?: Map<string, StoredLock | null>;
}

/** A search that does not show our own acknowledged write came from a copy that lags: ask again, a few times. */
const SEARCH_ATTEMPTS = 5;

/**
 * Returns our document as it stands when the lock may be granted. The grant's fencing token is our
 * last insertion, and after it a read of every ancestor from the primary showed neither a blocking
 * holder nor a version newer than that token; when an ancestor is newer we insert ourselves again
 * and read again. So any conflicting lock that ended before ours has a smaller token: one above us
 * wrote its ancestor version before our read, one below us read its ancestors before our first write.
 */
export async function confirmTreeScope(context: EngineContext, hold: ScopeHold): Promise<StoredLock> {
  const { settings } = context;
  const giveUpAt = Math.max(settings.now() + settings.contentionBudgetMs, hold.waitBelowUntil);
  let lock = hold.lock;
  let ancestorsRead = hold.ancestorsRead;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0 && settings.now() > giveUpAt) {
      throw new StoreUnavailableError(`The acquire of ${hold.path} kept stalling past its own lease while checking around it. Retry.`, {
        operation: 'acquire',
      });
    }
    if (attempt > 0) lock = await rewriteOurHolder(context, hold, lock, 'reissue');
    for (let round = 0; ; round++) {
      const newestAbove = await checkAncestors(context, hold, ancestorsRead);
      ancestorsRead = undefined;
      if (newestAbove === undefined || compareFencingTokens(fenceOf(ourHolder(lock, hold.leaseId), lock), newestAbove) > 0) break;
      if (round > 0 && settings.now() > giveUpAt) throw new LockContentionError(undefined, { keys: ancestorsOf(hold.path), rounds: round });
      lock = await rewriteOurHolder(context, hold, lock, 'reissue');
    }
    // Waiting ends with our own lease at the latest: we then insert ourselves again and look again.
    if (lock.body.lockedBelow === true && (await waitForLocksBelow(context, { ...hold, lock })) === 'lapsed') continue;
    // The checks count only if our holder was live throughout: only our own writes change its expiry,
    // so it was, from its insertion until now, if now is still before that expiry.
    const expiresAt = ourHolder(lock, hold.leaseId).expiresAt;
    if (settings.now() >= expiresAt) continue;
    if (expiresAt - settings.now() >= hold.ttlMs / 2) return lock;
    // A long wait for the locks below used up much of the lease: a grant starts with at least half a
    // TTL. The extension keeps the token only if it landed before the lease ran out.
    lock = await rewriteOurHolder(context, hold, lock, 'extend');
    if (settings.now() < expiresAt) return lock;
  }
}

function ourHolder(lock: StoredLock, leaseId: string): StoredHolder {
  const mine = lock.body.holders.find((holder) => holder.lease === leaseId);
  if (!mine) throw new StoreUnavailableError(`Our lease left ${lock.body.key} while the acquire was checking around it`, { operation: 'acquire' });
  return mine;
}

function conflictOf(
  key: string,
  requestedMode: HolderMode,
  holders: StoredHolder[],
  now: number,
  skewMs: number,
): { conflict: ConflictingKey; clearsAt: number } {
  return {
    conflict: { key, granularity: 'tree', requestedMode, holders: holders.map(({ owner, mode, expiresAt }) => ({ owner, mode, expiresAt })) },
    clearsAt: Math.max(now, ...holders.map((holder) => holder.expiresAt + skewMs)),
  };
}

function heldError(context: EngineContext, found: Array<{ conflict: ConflictingKey; clearsAt: number }>, now: number): LockHeldError {
  const { settings } = context;
  const clearsAt = Math.max(...found.map((entry) => entry.clearsAt));
  return new LockHeldError(undefined, {
    conflicts: found.map((entry) => entry.conflict),
    retryAfterMs: Math.max(settings.retry.baseDelayMs, Math.min(settings.maxRetryAfterMs, clearsAt - now)),
  });
}

/**
 * Reads every ancestor from the primary after our write: a live holder there whose mode does not
 * admit our intention blocks us. An ancestor not yet marked `lockedBelow` gets the mark (a
 * conditional write, once per directory), so that a later lock on it searches below. Returns the
 * newest version seen among the ancestors, as a fencing token.
 */
async function checkAncestors(context: EngineContext, hold: ScopeHold, readAlong?: Map<string, StoredLock | null>): Promise<string | undefined> {
  const { store, settings } = context;
  const paths = ancestorsOf(hold.path);
  if (paths.length === 0) return undefined;
  const intention = intentionMode(hold.mode);
  const keys: PlannedKey[] = paths.map((path) => ({
    docId: lockDocId(hold.namespace, 'tree', path),
    namespace: hold.namespace,
    granularity: 'tree',
    key: path,
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
        if (blocking.length > 0) blocked.push(conflictOf(key.key, intention, blocking, now, settings.maxClockSkewMs));
        else if (lock?.body.lockedBelow) observe(lock);
        else
          writes.push({
            item: key,
            op: lock
              ? replaceOp(lock, { ...lock.body, docId: lock.docId }, settleFences(lock), now, true)
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
async function waitForLocksBelow(context: EngineContext, hold: ScopeHold): Promise<'drained' | 'lapsed'> {
  const { store, settings } = context;
  const own = targetMode(hold.mode);
  const skew = settings.maxClockSkewMs;
  const blockingIn = (lock: StoredLock | null | undefined, now: number): StoredHolder[] =>
    lock?.body.holders.filter((holder) => isLive(holder, now, skew) && !compatible(own, asSeenFromAbove(holder.mode))) ?? [];

  let below: StoredLock[] | undefined;
  for (let attempt = 0; attempt < SEARCH_ATTEMPTS && below === undefined; attempt++) {
    const found = await store.findLiveBelow({ namespace: hold.namespace, path: hold.path, selfDocId: hold.lock.docId, liveAfter: settings.now() - skew });
    // Only a copy that shows our own write (or a later one) has everything acknowledged before it.
    const current = found.self?.body.holders.some((holder) => holder.lease === hold.leaseId) === true;
    if (current) below = found.below;
    else await contentionPause(settings, attempt);
  }
  if (below === undefined) {
    throw new StoreUnavailableError(`The search for locks below ${hold.path} kept answering from a copy that had not seen this acquire's write`, {
      operation: 'acquire',
    });
  }
  let blocking = below.filter((lock) => blockingIn(lock, settings.now()).length > 0);
  if (blocking.length === 0) return 'drained';
  if (hold.graceOnlyMs !== undefined) {
    const now = settings.now();
    const established = blocking.filter((lock) => blockingIn(lock, now).some((holder) => holder.grantedAt < now - hold.graceOnlyMs!));
    if (established.length > 0)
      throw heldError(
        context,
        established.map((lock) => conflictOf(lock.body.key, own, blockingIn(lock, now), now, skew)),
        now,
      );
  }
  const ourExpiry = ourHolder(hold.lock, hold.leaseId).expiresAt;
  for (let round = 0; ; round++) {
    const now = settings.now();
    if (now >= ourExpiry && now <= hold.waitBelowUntil) return 'lapsed';
    if (now > hold.waitBelowUntil) {
      throw heldError(
        context,
        blocking.map((lock) => conflictOf(lock.body.key, own, blockingIn(lock, now), now, skew)),
        now,
      );
    }
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
      return [{ item: current.docId, op: replaceOp(current, { ...current.body, docId: current.docId }, holders, now) }];
    },
    applied: (_, outcome, op) => {
      done = true;
      current = writtenLock(outcome, (op as Extract<WriteOp, { kind: 'replace' }>).body);
    },
    reread: async (changed) => {
      const read = (await store.readPrimary(changed)).get(current.docId);
      if (!read) throw new StoreUnavailableError(`${hold.path} was deleted while the acquire was taking it`, { operation: 'acquire' });
      current = read;
      ourHolder(current, hold.leaseId);
      return changed;
    },
    // Whether it landed or not, the primary's version is the one to go on from: a reissue that landed
    // shows as our holder inserted by the latest write (the caller compares again), an extension as its expiry.
    resolveLost: async (notApplied) => {
      const read = (await store.readPrimary(notApplied)).get(current.docId);
      if (!read) throw new StoreUnavailableError(`${hold.path} was deleted while the acquire was taking it`, { operation: 'acquire' });
      current = read;
      const mine = ourHolder(current, hold.leaseId);
      done = change === 'reissue' ? mine.fence === null && current.seqNo !== known.seqNo : mine.expiresAt - settings.now() >= hold.ttlMs / 2;
      return done ? [] : notApplied;
    },
    keysOf: () => [hold.path],
  });
  return current;
}
