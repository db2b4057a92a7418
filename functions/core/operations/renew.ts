/** Renew: extend every key of a lease to one new expiry, or report the lease lost. */
import { LeaseLostError } from '../errors.js';
import { maxFencingToken } from '../fencing.js';
import { rulesFor } from '../granularity/index.js';
import { encodeToken, hintFor } from '../lease-token.js';
import { fenceOf, lockDocument, settleFences, writtenLock } from '../lock-document.js';
import type { LockDocument, Renewal } from '../model.js';
import type { StoredLock, WriteOp } from '../store.js';
import { writeUntilSettled } from '../write-loop.js';
import { type EngineContext, keepingBudget } from './context.js';
import { type OwnedToken, readOwned } from './owned.js';
import { removeLease } from './remove-lease.js';

export async function renew(context: EngineContext, token: OwnedToken, ttlMs: number): Promise<Renewal> {
  // Computed once: a key extended in an early round must not be reported as ending later than it does.
  const expiresAt = context.settings.now() + ttlMs;
  const first = await readOwned(context, token);
  if (first.missingKeys.length > 0) throw new LeaseLostError(undefined, { leaseId: token.leaseId, lostKeys: first.missingKeys });
  if (!rulesFor(token.target.granularity).renewsAfterExpiry) await refuseIfRunOut(context, token, first.owned);
  const written = new Map<string, StoredLock>();
  await writeUntilSettled(context, keepingBudget(context.settings), first.owned, {
    decide: (pending, now) =>
      pending.map((lock) => {
        const holders = settleFences(lock).map((holder) => (holder.lease === token.leaseId ? { ...holder, expiresAt } : holder));
        const op: WriteOp = {
          kind: 'replace',
          docId: lock.docId,
          body: lockDocument({ ...lock.body, docId: lock.docId }, holders, now, lock.body.lockedBelow === true),
          ifSeqNo: lock.seqNo,
          ifPrimaryTerm: lock.primaryTerm,
        };
        return { item: lock, op };
      }),
    applied: (lock, outcome, op) => {
      const body = (op as Extract<WriteOp, { body: LockDocument }>).body;
      written.set(lock.docId, writtenLock(outcome, body));
    },
    // Another holder of a shared document wrote in between; our earlier writes in this call stand.
    reread: async (changed) => {
      const docIds = new Set(changed.map((lock) => lock.docId));
      const again = await readOwned(
        context,
        token,
        token.keys.filter((key) => docIds.has(key.docId)),
      );
      if (again.missingKeys.length > 0) throw new LeaseLostError(undefined, { leaseId: token.leaseId, lostKeys: again.missingKeys });
      return again.owned;
    },
    keysOf: (pending) => pending.map((lock) => lock.body.key),
  });
  if (!rulesFor(token.target.granularity).renewsAfterExpiry) await refuseIfRunOut(context, token, first.owned);
  const locks = token.keys.map((key) => written.get(key.docId)!);
  const mine = locks.map((lock) => lock.body.holders.find((holder) => holder.lease === token.leaseId)!);
  const earliest = Math.min(...mine.map((holder) => holder.expiresAt));
  return {
    leaseToken: encodeToken(
      { leaseId: token.leaseId, target: token.target, mode: token.mode, hints: locks.map(hintFor), expiresAt: earliest },
      token.secret,
      context.settings.tokenSigningKey,
    ),
    leaseId: token.leaseId,
    fencingToken: maxFencingToken(locks.map((lock, index) => fenceOf(mine[index]!, lock))),
    expiresAt: earliest,
    ttlMs,
  };
}

/**
 * Where another caller can take over without writing our documents (tree locks), only the clock
 * tells whether the lease was still ours: the renewal counts if it landed before the lease ran out
 * (others see it live until expiresAt plus the skew allowance). Checked before writing and again
 * after; a renewal that landed too late is taken back, since it may be blocking nobody's lock but
 * must not block anyone either.
 */
async function refuseIfRunOut(context: EngineContext, token: OwnedToken, before: readonly StoredLock[]): Promise<void> {
  const now = context.settings.now();
  const runOut = before.filter((lock) => lock.body.holders.some((holder) => holder.lease === token.leaseId && holder.expiresAt <= now));
  if (runOut.length === 0) return;
  await removeLease(
    context,
    await context.store.readPrimary(runOut.map((lock) => lock.docId)).then((found) => [...found.values()].filter((lock): lock is StoredLock => lock !== null)),
    token.leaseId,
  ).catch(() => undefined);
  throw new LeaseLostError(`Lease ${token.leaseId} ran out before it was renewed (${runOut.map((lock) => lock.body.key).join(', ')})`, {
    leaseId: token.leaseId,
    lostKeys: runOut.map((lock) => lock.body.key),
  });
}
