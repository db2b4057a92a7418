/**
 * Pure decisions over a work document: the record of the work an idempotency key names
 * (docs/protocol.md, "Work that runs once"). Who may take the work on, who may record its outcome,
 * and what each write leaves. operations/work.ts does the reads and writes.
 */
import { hash } from 'node:crypto';
import { workDocId } from './doc-id.js';
import { compareFencingTokens, type FencingToken, maxFencingToken } from './fencing.js';
import { rulesFor } from './granularity/index.js';
import type { CompletedWork, LockDocument, LockTarget, StoredWork, WorkClaim, WorkRecord } from './model.js';
import type { StoredLock, WriteOp } from './store.js';

/**
 * The key's hash names the work: the key itself (a message id, a payload digest) is never stored or
 * logged. The target is part of it, so one key on two targets names two pieces of work.
 */
export function workKeyHash(target: LockTarget, idempotencyKey: string): string {
  const identity = rulesFor(target.granularity).identity(target);
  return hash('sha256', JSON.stringify([target.namespace, target.granularity, identity, idempotencyKey]), 'base64url');
}

export { workDocId };

export type WorkState =
  /** An outcome `completed` that everyone may still see unexpired: the answer to every later call. */
  | { kind: 'completed'; answer: CompletedWork; payloadHash?: string }
  /** Taken on by a lease that may still be at it (its lease, as of the claim, has not ended). */
  | { kind: 'in_progress'; owner: string; since: number; payloadHash?: string }
  /** Nobody on it: never taken on, failed, expired, or its taker's lease ran out. */
  | { kind: 'open' };

/**
 * The state as every process may see it: a record counts as expired only once its `expiresAt` plus
 * the clock skew allowance has passed (as for the sweeper), so a caller whose clock runs ahead never
 * takes on work another caller would still be told is completed.
 */
export function workState(lock: StoredLock | null, now: number, skewMs: number): WorkState {
  const work = lock?.body.work;
  const outcome = work?.outcome;
  const payload = work?.payloadHash !== undefined ? { payloadHash: work.payloadHash } : {};
  if (work && outcome?.status === 'completed' && now < outcome.expiresAt + skewMs) {
    const { result, owner, fencingToken, recordedAt, expiresAt } = outcome;
    return {
      kind: 'completed',
      answer: { status: 'completed', keyHash: work.keyHash, ...(result !== undefined ? { result } : {}), owner, fencingToken, recordedAt, expiresAt },
      ...payload,
    };
  }
  if (work?.claim && !work.outcome && now < work.claim.expiresAt + skewMs)
    return { kind: 'in_progress', owner: work.claim.owner, since: work.claim.claimedAt, ...payload };
  return { kind: 'open' };
}

/**
 * Whether a call of payload hash `given` is refused on this state: the work was completed, or is
 * in progress, for another payload. Only a record or a live claim is checked, as Powertools checks
 * only a record that has not expired: a failed record, or a claim whose lease ended, is replaced by
 * whichever delivery comes next, its payload with it. A side without a hash (a caller that gave
 * none, or a record written before hashes) matches any payload.
 */
export function payloadMismatch(state: WorkState, given: string | undefined): { found: 'completed' | 'in_progress'; stored: string } | undefined {
  if (state.kind === 'open' || given === undefined || state.payloadHash === undefined || state.payloadHash === given) return undefined;
  return { found: state.kind, stored: state.payloadHash };
}

export interface WorkTaker {
  lease: string;
  owner: string;
  fencingToken: FencingToken;
  expiresAt: number;
  /** The lease's lock documents (WorkClaim.locks). */
  locks: string[];
  /** The hash of the payload it takes the work on for (none: the caller gave none). */
  payloadHash?: string;
}

/** The revoke's name for a fenced claim: no lease id has this form (lease-token.ts), so nobody records under it. */
export const REVOKED_CLAIM = '~revoked';

/**
 * Whether `claim` keeps `lease` (fencing token `fencingToken`) from taking the work on: it names a
 * later lease (a token as large or larger: that lease was granted the exclusive lock after ours, so
 * ours has ended), or it is a revoke's fence of this very lease.
 */
const claimBars = (claim: WorkClaim | undefined, lease: string, fencingToken: FencingToken): boolean =>
  claim !== undefined && claim.lease !== lease && (claim.revoked === lease || compareFencingTokens(claim.fencingToken, fencingToken) >= 0);

/**
 * The write that takes the work on for `taker`, who was granted the target's lock exclusively: on the
 * version read (or a create). An earlier claim (a smaller token) is stale, since its lease no longer
 * holds the lock, so it is replaced, and with it that lease's right to record. Undefined: a completed
 * outcome (never replaced), a live claim of another payload (payloadMismatch), or a claim that bars
 * the taker (claimBars): the taker's lease has ended.
 */
export function claimWorkOp(
  existing: StoredLock | null,
  namespace: string,
  keyHash: string,
  taker: WorkTaker,
  now: number,
  skewMs: number,
): WriteOp | undefined {
  const state = existing ? workState(existing, now, skewMs) : ({ kind: 'open' } as const);
  if (state.kind === 'completed' || payloadMismatch(state, taker.payloadHash)) return undefined;
  if (claimBars(existing?.body.work?.claim, taker.lease, taker.fencingToken)) return undefined;
  const work: StoredWork = {
    keyHash,
    ...(taker.payloadHash !== undefined ? { payloadHash: taker.payloadHash } : {}),
    claim: { lease: taker.lease, owner: taker.owner, fencingToken: taker.fencingToken, claimedAt: now, expiresAt: taker.expiresAt, locks: taker.locks },
  };
  return workWrite(existing, namespace, keyHash, work, now);
}

/**
 * The write that records `lease`'s outcome: only while the work is claimed by that lease. A lease that
 * never took the work on (no document, another claim, a revoke's fence) records nothing, whatever its
 * token names. Undefined: it may not.
 */
export function recordWorkOp(
  existing: StoredLock | null,
  namespace: string,
  keyHash: string,
  lease: { leaseId: string; owner: string; fencingToken: FencingToken },
  record: WorkRecord,
  now: number,
): WriteOp | undefined {
  const claim = existing?.body.work?.claim;
  if (!existing || !claim || claim.lease !== lease.leaseId || existing.body.work?.outcome) return undefined;
  const outcome: NonNullable<StoredWork['outcome']> = {
    status: record.status,
    ...(record.result !== undefined ? { result: record.result } : {}),
    lease: lease.leaseId,
    owner: lease.owner,
    fencingToken: lease.fencingToken,
    recordedAt: now,
    expiresAt: now + record.ttlMs,
  };
  const payload = existing.body.work?.payloadHash !== undefined ? { payloadHash: existing.body.work.payloadHash } : {};
  return workWrite(existing, namespace, keyHash, { keyHash, ...payload, claim, outcome }, now);
}

/** A holder a revoke removes, as its fence of the holder's work needs it. */
export interface RevokedTaker {
  lease: string;
  owner: string;
  /** Its token on the revoked key. */
  fencingToken: FencingToken;
  expiresAt: number;
}

/**
 * A revoke's fence of the work `revoked` may have taken on, written before the revoke removes it from
 * the lock: the claim replaced by one that names no lease (REVOKED_CLAIM), so a record of the revoked
 * lease, conditional on the claim naming it, no longer applies, nor does a claim it has yet to write.
 * A later lease (a larger token) replaces the fence as it would any stale claim. Undefined: nothing to
 * fence (the lease recorded already, a later lease has the work, or it is fenced already); a
 * completed outcome is never replaced.
 */
export function fenceWorkOp(
  existing: StoredLock | null,
  namespace: string,
  keyHash: string,
  revoked: RevokedTaker,
  now: number,
  skewMs: number,
): WriteOp | undefined {
  const work = existing?.body.work;
  if (work?.outcome?.lease === revoked.lease || (existing && workState(existing, now, skewMs).kind === 'completed')) return undefined;
  const claim = work?.claim;
  if (claim?.revoked === revoked.lease || claimBars(claim, revoked.lease, revoked.fencingToken)) return undefined;
  const fencingToken = claim?.lease === revoked.lease ? maxFencingToken([claim.fencingToken, revoked.fencingToken]) : revoked.fencingToken;
  const fence: WorkClaim = { lease: REVOKED_CLAIM, owner: revoked.owner, fencingToken, claimedAt: now, expiresAt: revoked.expiresAt, revoked: revoked.lease };
  const payload = work?.payloadHash !== undefined ? { payloadHash: work.payloadHash } : {};
  return workWrite(existing, namespace, keyHash, { keyHash, ...payload, claim: fence, ...(work?.outcome ? { outcome: work.outcome } : {}) }, now);
}

/** Whether `leaseId` has recorded this outcome already (its release is being retried). */
export const recordedBy = (lock: StoredLock | null, leaseId: string): boolean => lock?.body.work?.outcome?.lease === leaseId;

/** When the sweeper may look at a work document: its outcome's expiry, or its claim's lease end. Never before. */
export const workEndsAt = (work: StoredWork): number => work.outcome?.expiresAt ?? work.claim?.expiresAt ?? 0;

/** The lock documents the sweeper reads before it decides on a claim that looks ended (its lease may have been renewed). */
export const claimLocksToCheck = (work: StoredWork): string[] =>
  work.outcome || !work.claim || work.claim.revoked !== undefined ? [] : (work.claim.locks ?? []);

/**
 * The sweeper's write on a work document once `workEndsAt` plus the skew has passed: deleted, unless
 * it is the claim of a lease that still holds every one of its lock documents (`locks`, read on the
 * primary): a renewed lease keeps its claim, its end moved to the lease's. Undefined: not due yet.
 */
export function sweepWorkOp(lock: StoredLock, locks: ReadonlyMap<string, StoredLock | null>, now: number, skewMs: number): WriteOp | undefined {
  const work = lock.body.work!;
  if (workEndsAt(work) + skewMs > now) return undefined;
  const claim = work.claim;
  const docIds = claimLocksToCheck(work);
  const held = docIds.map((docId) => locks.get(docId)?.body.holders.find((holder) => holder.lease === claim?.lease));
  if (claim && docIds.length > 0 && held.every((holder) => holder !== undefined && now < holder.expiresAt + skewMs)) {
    const expiresAt = Math.min(...held.map((holder) => holder!.expiresAt));
    return workWrite(lock, lock.body.namespace, work.keyHash, { ...work, claim: { ...claim, expiresAt } }, now);
  }
  return { kind: 'delete', docId: lock.docId, ifSeqNo: lock.seqNo, ifPrimaryTerm: lock.primaryTerm, index: lock.index };
}

/** The conditional write of `work` on the version read, or its create. */
function workWrite(existing: StoredLock | null, namespace: string, keyHash: string, work: StoredWork, now: number): WriteOp {
  const body = workDocument(namespace, keyHash, work, now);
  if (!existing) return { kind: 'create', docId: workDocId(namespace, keyHash), body };
  return { kind: 'replace', docId: existing.docId, body, ifSeqNo: existing.seqNo, ifPrimaryTerm: existing.primaryTerm, index: existing.index };
}

/**
 * A work document has no holders, so searches for live locks skip it; `minExpiresAt` brings the
 * sweeper to it once it ends (sweepWorkOp).
 */
function workDocument(namespace: string, keyHash: string, work: StoredWork, now: number): LockDocument {
  return {
    namespace,
    granularity: 'document',
    key: `~work/${keyHash}`,
    lockId: workDocId(namespace, keyHash),
    holders: [],
    minExpiresAt: workEndsAt(work),
    updatedAt: now,
    work,
  };
}
