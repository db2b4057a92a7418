/**
 * Break glass: an operator takes the lock on a target from whoever holds it. The audit record first,
 * then one conditional write per key of the target that removes its holders (the same write hands the
 * lock to the next waiter), each preceded by the fence of its holders' work (a revoked lease records
 * nothing after it), then the revoked leases leave their other keys (intentions above, the
 * other ids of a document lease), best effort. A revoked holder's next renew answers LeaseLostError;
 * on each key, every later grant's fencing token is above the revoke's write there, which is above
 * every revoked holder's.
 */
import { maxFencingToken, tokenAt } from '../fencing.js';
import { planKeys } from '../keys.js';
import { fenceOf, revokeOp } from '../lock-document.js';
import type { FencingToken, Revocation, RevokedHolder, StoredHolder } from '../model.js';
import type { AdminRequest } from '../requests.js';
import type { StoredLock } from '../store.js';
import { writeUntilSettled } from '../write-loop.js';
import { recordAudit } from './audit.js';
import { type EngineContext, keepingBudget } from './context.js';
import { removeLease } from './remove-lease.js';
import { fenceRevokedWork } from './work.js';

export async function revoke(context: EngineContext, request: AdminRequest): Promise<Revocation> {
  const record = await recordAudit(context, 'revoke', request);
  const attempt = new RevokeAttempt(context, request);
  await attempt.takeHolders();
  const alsoReleased = await attempt.releaseElsewhere();
  const { target, by, reason, at } = record;
  return {
    target,
    by,
    reason,
    at,
    revoked: attempt.revoked,
    fencingToken: attempt.fencingToken(),
    keys: attempt.written,
    handedOver: attempt.handedOver,
    alsoReleased,
  };
}

class RevokeAttempt {
  readonly revoked: RevokedHolder[] = [];
  /** The keys written, each with its write's token. */
  readonly written: Array<{ key: string; fencingToken: FencingToken }> = [];
  handedOver = 0;
  /** The target's own keys (the lock on it, not the intentions above). */
  private readonly docIds: string[];
  private readonly leases = new Map<string, StoredHolder>();

  constructor(
    private readonly context: EngineContext,
    private readonly request: AdminRequest,
  ) {
    this.docIds = planKeys(request.target, 'exclusive')
      .filter((key) => key.mode === 'X')
      .map((key) => key.docId);
  }

  /** One conditional write per key, decided on the primary's version: a copy that lags only makes it fail and read again. */
  async takeHolders(): Promise<void> {
    const { context } = this;
    const read = await context.store.readPrimary(this.docIds);
    const locks = this.docIds.flatMap((docId) => read.get(docId) ?? []);
    await this.fenceWork(locks);
    const taken = new Map<string, StoredHolder[]>();
    await writeUntilSettled(context, keepingBudget(context.settings), locks, {
      decide: (pending, now) =>
        pending.flatMap((lock) => {
          const decision = revokeOp(lock, now, context.settings);
          if (!decision) return [];
          taken.set(lock.docId, decision.revoked);
          return [{ item: lock, op: decision.op }];
        }),
      applied: (lock, outcome, op) => {
        this.handedOver += op.queueEffects?.reserved.length ?? 0;
        this.written.push({ key: lock.body.key, fencingToken: tokenAt(outcome) });
        for (const holder of taken.get(lock.docId) ?? []) this.noteRevoked(lock, holder);
      },
      reread: async (changed) => {
        const fresh = await context.store.readPrimary(changed.map((lock) => lock.docId));
        const again = changed.flatMap((lock) => fresh.get(lock.docId) ?? []);
        await this.fenceWork(again);
        return again;
      },
      keysOf: (pending) => pending.map((lock) => lock.body.key),
    });
  }

  /**
   * Whatever ends a lease ends its work: the work claims of the holders about to be revoked are fenced
   * first (operations/work.ts fenceRevokedWork), so a record of theirs conditional on the claim fails
   * from here on. Done again for the holders a conflict brings.
   */
  private async fenceWork(locks: readonly StoredLock[]): Promise<void> {
    const { context } = this;
    const now = context.settings.now();
    const revoked = locks.flatMap((lock) =>
      (revokeOp(lock, now, context.settings)?.revoked ?? []).flatMap((holder) =>
        holder.work ? [{ lease: holder.lease, owner: holder.owner, fencingToken: fenceOf(holder, lock), expiresAt: holder.expiresAt, work: holder.work }] : [],
      ),
    );
    if (revoked.length > 0) await fenceRevokedWork(context, this.request.target.namespace, revoked);
  }

  private noteRevoked(lock: StoredLock, holder: StoredHolder): void {
    this.leases.set(holder.lease, holder);
    this.revoked.push({
      key: lock.body.key,
      leaseId: holder.lease,
      owner: holder.owner,
      mode: holder.mode,
      fencingToken: fenceOf(holder, lock),
      expiresAt: holder.expiresAt,
    });
  }

  /**
   * The revoked leases on keys outside the target, found by a search of their owner's locks (about a
   * second behind: a key taken in the last second is missed and ends with its lease). Best effort:
   * the revoke itself is done.
   */
  async releaseElsewhere(): Promise<string[]> {
    const { context } = this;
    const released: string[] = [];
    for (const holder of this.leases.values()) {
      try {
        const owned = await context.store.list({ namespace: this.request.target.namespace, owner: holder.owner, limit: 1_000 });
        const elsewhere = owned.filter((lock) => !this.docIds.includes(lock.docId) && lock.body.holders.some((other) => other.lease === holder.lease));
        const { missing } = await removeLease(context, elsewhere, holder.lease);
        released.push(...elsewhere.map((lock) => lock.body.key).filter((key) => !missing.includes(key)));
      } catch {
        // Left to run out with its lease.
      }
    }
    return released;
  }

  fencingToken(): FencingToken | null {
    return this.written.length > 0 ? maxFencingToken(this.written.map((key) => key.fencingToken)) : null;
  }
}
