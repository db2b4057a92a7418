/**
 * Renew: extend every key of a lease to one new expiry, or report the lease lost.
 *
 * A lease that has run out is never renewed, whatever its documents say: another lock can take over
 * without writing them (a tree lock above or below, a global lock over document locks). So a renewal
 * counts only if it landed while the lease was still ours, and that is judged on the version the
 * conditional write replaced (the primary's own state at that moment), never on a plain read.
 * Where nothing has written the lease's documents since its own last write, that write is the only
 * request (renew-in-place.ts); otherwise the documents are read on the way.
 */
import { LeaseLostError, StoreUnavailableError } from '../errors.js';
import { maxFencingToken } from '../fencing.js';
import { encodeToken, hintFor } from '../lease-token.js';
import { fenceOf, replaceOp, settleFences, writtenLock } from '../lock-document.js';
import type { LockDocument, PlannedKey, Renewal, StoredHolder } from '../model.js';
import type { StoredLock, WriteOp } from '../store.js';
import { writeUntilSettled } from '../write-loop.js';
import { type EngineContext, keepingBudget } from './context.js';
import { type OwnedToken, ownedIn, readOwned } from './owned.js';
import { removeLease } from './remove-lease.js';
import { renewInPlace } from './renew-in-place.js';

export async function renew(context: EngineContext, token: OwnedToken, ttlMs: number): Promise<Renewal> {
  const { settings } = context;
  // Computed once: a key extended in an early round must not be reported as ending later than it does.
  const expiresAt = settings.now() + ttlMs;
  const { renewed: written, current } = await renewInPlace(context, token, expiresAt);
  // Each document renewed in place was as our last write left it, our lease ending no earlier than the token says.
  if (written.size > 0 && settings.now() >= token.expiresAt!) await takeBack(context, token, [...written.values()], 'its renewal landed after it had run out');
  const rest = token.keys.filter((key) => !written.has(key.docId));
  if (rest.length > 0) await renewByReading(context, token, rest, expiresAt, written, current);
  const locks = token.keys.map((key) => written.get(key.docId)!);
  const mine = locks.map((lock) => lock.body.holders.find((holder) => holder.lease === token.leaseId)!);
  const earliest = Math.min(...mine.map((holder) => holder.expiresAt));
  // As for a grant: a renewal that stalled so long that little of it is left is no renewal to return.
  const left = earliest - settings.now();
  if (left < ttlMs / 2) {
    throw new StoreUnavailableError(
      { operation: 'renew' },
      `The renewal of lease ${token.leaseId} stalled (the lock store or this process): it would have had ${Math.max(0, left)} ms of ${ttlMs} left. Retry.`,
    );
  }
  return {
    leaseToken: encodeToken(
      {
        leaseId: token.leaseId,
        target: token.target,
        mode: token.mode,
        hints: locks.map(hintFor),
        expiresAt: earliest,
        ...(token.grantedAt !== undefined ? { grantedAt: token.grantedAt } : {}),
        ...(token.work ? { work: token.work } : {}),
      },
      token.secret,
      settings.tokenSigningKey,
    ),
    leaseId: token.leaseId,
    fencingToken: maxFencingToken(locks.map((lock, index) => fenceOf(mine[index]!, lock))),
    expiresAt: earliest,
    ttlMs,
  };
}

/** The keys' documents, each written with our lease extended (into `written`): read, unless `current` has them all already as the primary had them. */
async function renewByReading(
  context: EngineContext,
  token: OwnedToken,
  keys: PlannedKey[],
  expiresAt: number,
  written: Map<string, StoredLock>,
  current: ReadonlyMap<string, StoredLock | null>,
): Promise<void> {
  const { settings } = context;
  // Read with the writes in place (renew-in-place.ts), or now; either way what says "lost" is the primary's.
  const first = keys.every((key) => current.has(key.docId)) ? ownedIn(token, keys, current) : await readOwned(context, token, keys);
  if (first.missingKeys.length > 0) throw new LeaseLostError({ leaseId: token.leaseId, lostKeys: first.missingKeys });
  const owned = await refuseIfRunOut(context, token, first.owned);
  const late: StoredLock[] = [];
  await writeUntilSettled(context, keepingBudget(settings), owned, {
    decide: (pending, now) =>
      pending.map((lock) => {
        const holders = settleFences(lock).map((holder) => (holder.lease === token.leaseId ? renewed(holder, expiresAt) : holder));
        // Through replaceOp: a renewal that finds holders run out serves the queue they were keeping waiting.
        const op = replaceOp(lock, { ...lock.body, docId: lock.docId }, holders, now, settings);
        return { item: lock, op };
      }),
    applied: (lock, outcome, op) => {
      const renewed = writtenLock(outcome, (op as Extract<WriteOp, { body: LockDocument }>).body);
      written.set(lock.docId, renewed);
      // `lock` is the version the write replaced: our lease ended at this expiry unless the write landed before it.
      if (settings.now() >= ourExpiry(lock, token.leaseId)) late.push(renewed);
    },
    // Another holder of a shared document wrote in between (our earlier writes in this call stand):
    // its version comes from the primary, since a lagging copy would only make the next write fail.
    reread: async (changed) => {
      const docIds = new Set(changed.map((lock) => lock.docId));
      const again = await readOwned(
        context,
        token,
        token.keys.filter((key) => docIds.has(key.docId)),
        true,
      );
      if (again.missingKeys.length > 0) throw new LeaseLostError({ leaseId: token.leaseId, lostKeys: again.missingKeys });
      return refuseIfRunOut(context, token, again.owned);
    },
    keysOf: (pending) => pending.map((lock) => lock.body.key),
  });
  if (late.length > 0) await takeBack(context, token, late, 'its renewal landed after it had run out');
}

const renewed = (holder: StoredHolder, expiresAt: number): StoredHolder => ({ ...holder, expiresAt });

const ourExpiry = (lock: StoredLock, leaseId: string): number => lock.body.holders.find((holder) => holder.lease === leaseId)?.expiresAt ?? -Infinity;

/**
 * Documents whose version says our lease has run out: the primary decides (a lagging copy can show an
 * expiry that a renewal of ours has since moved). Returns the documents to write, those confirmed
 * from the primary in place of the ones read; throws LeaseLostError when the primary agrees.
 */
async function refuseIfRunOut(context: EngineContext, token: OwnedToken, locks: StoredLock[]): Promise<StoredLock[]> {
  const now = context.settings.now();
  const doubtful = locks.filter((lock) => ourExpiry(lock, token.leaseId) <= now);
  if (doubtful.length === 0) return locks;
  const primary = await context.store.readPrimary(doubtful.map((lock) => lock.docId));
  const at = context.settings.now();
  const runOut = doubtful.filter((lock) => {
    const current = primary.get(lock.docId);
    return !current || ourExpiry(current, token.leaseId) <= at;
  });
  if (runOut.length > 0) {
    await takeBack(
      context,
      token,
      runOut.flatMap((lock) => primary.get(lock.docId) ?? []),
      'it ran out before it was renewed',
    );
  }
  return locks.map((lock) => primary.get(lock.docId) ?? lock);
}

/** A lease that ran out may block nobody's lock now, but must not block anyone either: its holder goes, and the caller hears it lost. */
async function takeBack(context: EngineContext, token: OwnedToken, locks: StoredLock[], why: string): Promise<never> {
  await removeLease(context, locks, token.leaseId).catch(() => undefined);
  const lostKeys = locks.map((lock) => lock.body.key);
  throw new LeaseLostError({ leaseId: token.leaseId, lostKeys }, `Lease ${token.leaseId} is lost on ${lostKeys.join(', ')}: ${why}`);
}
