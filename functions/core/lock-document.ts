/** Pure decisions over one lock document: who holds it, whether a request fits, what to write. */
import { compatible } from './compatibility.js';
import { fencingToken } from './fencing.js';
import type { ConflictingKey, HolderView, LockDocument, PlannedKey, StoredHolder } from './model.js';
import type { StoredLock, WriteOp } from './store.js';

export interface Claim {
  leaseId: string;
  proof: string;
  owner: string;
  requestId: string | null;
  expiresAt: number;
}

/** Seen by anyone but the holder, a lease ends only once the clock skew allowance has also passed. */
export const isLive = (holder: StoredHolder, now: number, skewMs: number): boolean => now < holder.expiresAt + skewMs;

/** The pending holder (fence null) was inserted by the write that produced (term, seq): fix its token before changing the document. */
export function settleFences(lock: StoredLock): StoredHolder[] {
  return lock.body.holders.map((holder) =>
    holder.fence === null ? { ...holder, fence: fencingToken(lock.primaryTerm, lock.seqNo) } : holder,
  );
}

export function fenceOf(holder: StoredHolder, written: { primaryTerm: number; seqNo: number }): number {
  return holder.fence ?? fencingToken(written.primaryTerm, written.seqNo);
}

export function lockDocument(key: Pick<PlannedKey, 'docId' | 'namespace' | 'granularity' | 'key'>, holders: StoredHolder[], now: number): LockDocument {
  const expiries = holders.map((holder) => holder.expiresAt);
  return {
    namespace: key.namespace,
    granularity: key.granularity,
    key: key.key,
    lockId: key.docId,
    holders,
    minExpiresAt: Math.min(...expiries),
    maxExpiresAt: Math.max(...expiries),
    updatedAt: now,
  };
}

export type Decision =
  | { kind: 'conflict'; conflict: ConflictingKey; clearsAt: number }
  /** Our lease is already there (an earlier attempt of this call landed): nothing to write. */
  | { kind: 'already-held'; lock: StoredLock }
  | { kind: 'write'; op: WriteOp; reused: boolean };

/**
 * Whether `claim` may take `key` given the document as read (null: absent), and the write that takes
 * it. Expired holders are dropped on the way: that is the immediate takeover.
 */
export function decideAcquire(existing: StoredLock | null, key: PlannedKey, claim: Claim, now: number, skewMs: number): Decision {
  const fresh: StoredHolder = {
    lease: claim.leaseId,
    proof: claim.proof,
    owner: claim.owner,
    mode: key.mode,
    expiresAt: claim.expiresAt,
    grantedAt: now,
    fence: null,
    request: claim.requestId,
  };
  if (!existing) return { kind: 'write', op: { kind: 'create', docId: key.docId, body: lockDocument(key, [fresh], now) }, reused: false };

  if (existing.body.holders.some((holder) => holder.lease === claim.leaseId)) return { kind: 'already-held', lock: existing };

  const holders = settleFences(existing);
  const retried =
    claim.requestId === null
      ? undefined
      : holders.find((holder) => holder.request === claim.requestId && holder.mode === key.mode && holder.owner === claim.owner && isLive(holder, now, skewMs));
  const others = holders.filter((holder) => holder !== retried && isLive(holder, now, skewMs));
  const blocking = others.filter((holder) => !compatible(key.mode, holder.mode));
  if (blocking.length > 0) {
    return {
      kind: 'conflict',
      conflict: {
        key: key.key,
        granularity: key.granularity,
        requestedMode: key.mode,
        holders: blocking.map(({ owner, mode, expiresAt }) => ({ owner, mode, expiresAt })),
      },
      clearsAt: Math.max(...blocking.map((holder) => holder.expiresAt + skewMs)),
    };
  }
  // A retry of the same request keeps its grant (and fencing token) under the new lease id and secret.
  const mine: StoredHolder = retried ? { ...retried, lease: claim.leaseId, proof: claim.proof, expiresAt: claim.expiresAt } : fresh;
  return {
    kind: 'write',
    op: replaceOp(existing, key, [...others, mine], now),
    reused: retried !== undefined,
  };
}

export function replaceOp(existing: StoredLock, key: Pick<PlannedKey, 'docId' | 'namespace' | 'granularity' | 'key'>, holders: StoredHolder[], now: number): WriteOp {
  if (holders.length === 0) {
    return { kind: 'delete', docId: existing.docId, ifSeqNo: existing.seqNo, ifPrimaryTerm: existing.primaryTerm };
  }
  return {
    kind: 'replace',
    docId: existing.docId,
    body: lockDocument(key, holders, now),
    ifSeqNo: existing.seqNo,
    ifPrimaryTerm: existing.primaryTerm,
  };
}

/** The write that removes one lease (and any expired holders) from a document; undefined when the lease is not there. */
export function removeLeaseOp(existing: StoredLock, leaseId: string, now: number, skewMs: number): WriteOp | undefined {
  if (!existing.body.holders.some((holder) => holder.lease === leaseId)) return undefined;
  const remaining = settleFences(existing).filter((holder) => holder.lease !== leaseId && isLive(holder, now, skewMs));
  return replaceOp(existing, { ...existing.body, docId: existing.docId }, remaining, now);
}

export function holderViews(lock: StoredLock, now: number, skewMs: number): HolderView[] {
  return lock.body.holders.map((holder) => ({
    owner: holder.owner,
    mode: holder.mode,
    expiresAt: holder.expiresAt,
    fencingToken: fenceOf(holder, lock),
    expired: !isLive(holder, now, skewMs),
  }));
}
