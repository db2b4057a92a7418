/**
 * Pure decisions over a work document: the record of the work an idempotency key names
 * (docs/protocol.md, "Work that runs once"). Who may take the work on, who may record its outcome,
 * and what each write leaves. operations/work.ts does the reads and writes.
 */
import { hash } from 'node:crypto';
import { workDocId } from './doc-id.js';
import type { FencingToken } from './fencing.js';
import { rulesFor } from './granularity/index.js';
import type { CompletedWork, LockDocument, LockTarget, StoredWork, WorkRecord } from './model.js';
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
  /** An outcome `completed` that has not expired: the answer to every later call. */
  | { kind: 'completed'; answer: CompletedWork }
  /** Taken on by a lease that may still be at it (its lease, as of the claim, has not ended). */
  | { kind: 'in_progress'; owner: string; since: number }
  /** Nobody on it: never taken on, failed, expired, or its taker's lease ran out. */
  | { kind: 'open' };

export function workState(lock: StoredLock | null, now: number, skewMs: number): WorkState {
  const work = lock?.body.work;
  const outcome = work?.outcome;
  if (work && outcome?.status === 'completed' && now < outcome.expiresAt) {
    const { result, owner, fencingToken, recordedAt, expiresAt } = outcome;
    return {
      kind: 'completed',
      answer: { status: 'completed', keyHash: work.keyHash, ...(result !== undefined ? { result } : {}), owner, fencingToken, recordedAt, expiresAt },
    };
  }
  if (work?.claim && !work.outcome && now < work.claim.expiresAt + skewMs) return { kind: 'in_progress', owner: work.claim.owner, since: work.claim.claimedAt };
  return { kind: 'open' };
}

export interface WorkTaker {
  lease: string;
  owner: string;
  fencingToken: FencingToken;
  expiresAt: number;
}

/**
 * The write that takes the work on for `taker`, who holds the target's lock exclusively: on the
 * version read (or a create). Any earlier claim is stale (its lease no longer holds the lock), so it
 * is replaced, and with it that lease's right to record. A completed outcome is never replaced.
 */
export function claimWorkOp(existing: StoredLock | null, namespace: string, keyHash: string, taker: WorkTaker, now: number): WriteOp | undefined {
  if (existing && workState(existing, now, 0).kind === 'completed') return undefined;
  const work: StoredWork = {
    keyHash,
    claim: { lease: taker.lease, owner: taker.owner, fencingToken: taker.fencingToken, claimedAt: now, expiresAt: taker.expiresAt },
  };
  const body = workDocument(namespace, keyHash, work, now);
  if (!existing) return { kind: 'create', docId: workDocId(namespace, keyHash), body };
  return { kind: 'replace', docId: existing.docId, body, ifSeqNo: existing.seqNo, ifPrimaryTerm: existing.primaryTerm, index: existing.index };
}

/**
 * The write that records `lease`'s outcome: only while the work is claimed by that lease, or has no
 * document at all (the sweeper removed a claim whose lease had seemed to run out, yet the lease, renewed,
 * still holds the lock: nobody else has taken the work on, or there would be a document). Undefined:
 * another lease has taken the work on (or recorded it), so this one may not.
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
  if (existing && (claim?.lease !== lease.leaseId || existing.body.work?.outcome)) return undefined;
  const outcome: NonNullable<StoredWork['outcome']> = {
    status: record.status,
    ...(record.result !== undefined ? { result: record.result } : {}),
    lease: lease.leaseId,
    owner: lease.owner,
    fencingToken: lease.fencingToken,
    recordedAt: now,
    expiresAt: now + record.ttlMs,
  };
  const body = workDocument(namespace, keyHash, { keyHash, ...(claim ? { claim } : {}), outcome }, now);
  if (!existing) return { kind: 'create', docId: workDocId(namespace, keyHash), body };
  return { kind: 'replace', docId: existing.docId, body, ifSeqNo: existing.seqNo, ifPrimaryTerm: existing.primaryTerm, index: existing.index };
}

/** Whether `leaseId` has recorded this outcome already (its release is being retried). */
export const recordedBy = (lock: StoredLock | null, leaseId: string): boolean => lock?.body.work?.outcome?.lease === leaseId;

/** When the sweeper may delete a work document: its outcome's expiry, or its claim's lease end. Never before. */
export const workEndsAt = (work: StoredWork): number => work.outcome?.expiresAt ?? work.claim?.expiresAt ?? 0;

/**
 * A work document has no holders, so searches for live locks skip it; `minExpiresAt` brings the
 * sweeper to it once it ends (sweep.ts deletes it then, on the version it found).
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
