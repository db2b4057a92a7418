/**
 * Work that runs once (docs/protocol.md, "Work that runs once"). An acquire with an idempotency key
 * answers the recorded result when the work was completed; otherwise it takes the lock (exclusively)
 * and then takes the work on, on the work's own document. Its release may record the outcome, which
 * only the lease that took the work on last can do, and only while it still holds the lock.
 */
import {
  LeaseLostError,
  LockContentionError,
  LockHeldError,
  LockOutcomeUnknownError,
  StoreUnavailableError,
  ValidationError,
  WorkInProgressError,
  WorkPayloadMismatchError,
} from '../errors.js';
import { maxFencingToken } from '../fencing.js';
import { planKeys } from '../keys.js';
import { decodeToken } from '../lease-token.js';
import { fenceOf, lostKey } from '../lock-document.js';
import type { AcquireRequest, CompletedWork, ConflictingKey, Grant, PlannedKey, Queued, Release, WorkRecord } from '../model.js';
import type { StoredLock } from '../store.js';
import { claimWorkOp, fenceWorkOp, payloadMismatch, type RevokedTaker, recordedBy, recordWorkOp, type WorkState, workDocId, workState } from '../work.js';
import { acquireOrQueue } from './acquire.js';
import { callFingerprint } from './acquire-attempt.js';
import type { EngineContext } from './context.js';
import { type OwnedToken, readOwned } from './owned.js';
import { leaveQueue } from './queue-wait.js';
import { release } from './release.js';

/** How many times a write on the work document is tried again after someone changed it in between. */
const WORK_WRITE_ROUNDS = 4;

type WorkRequest = AcquireRequest & { work: { keyHash: string; payloadHash?: string } };

export async function acquireWork(context: EngineContext, request: WorkRequest): Promise<Grant | Queued | CompletedWork> {
  const seen = await readWork(context, request);
  const state = workState(seen, context.settings.now(), context.settings.maxClockSkewMs);
  // Another payload's record or live claim: refused before anything is written (no lock, no ticket, no claim).
  const mismatch = mismatchError(request, state);
  if (mismatch) {
    await leaveReservation(context, request);
    throw mismatch;
  }
  if (state.kind === 'completed') {
    await leaveReservation(context, request);
    return state.answer;
  }
  // A claim is "in progress" only while its taker holds the lock: a caller that gets the lock has the
  // work (the claim's lease was given back without a record, or its claim's answer was lost).
  let granted: Grant | Queued;
  try {
    granted = await acquireOrQueue(context, request);
  } catch (error) {
    // Held by another delivery of this call, or by someone while the work has a claim (its taker's, most likely).
    if (error instanceof LockHeldError) {
      const claim = seen?.body.work?.claim;
      // A claim whose recorded end passed while its lease, renewed, still holds the lock: in progress, for its payload.
      if (claim) {
        const live = !seen?.body.work?.outcome && claim.revoked === undefined;
        throw (
          (live ? mismatchError(request, { kind: 'in_progress', owner: claim.owner, since: claim.claimedAt, ...payloadOf(seen) }) : undefined) ??
          inProgress(context, request, claim.owner, claim.claimedAt, error)
        );
      }
      if (error.conflicts.some((conflict) => conflict.reason === 'duplicate_in_progress')) throw inProgress(context, request, undefined, undefined, error);
    }
    throw error;
  }
  if ('status' in granted) return granted;
  return takeOn(context, request, granted, seen);
}

/**
 * Takes the work on under the grant, on the version read before (or re-read when it changed). The claim
 * is written together with a primary read of the lock's documents, after it in the same request: the
 * grant is answered only if that read shows our lease on every key and, by the clock read after the
 * answer came, at least half its TTL left (as for the grant itself). A claim that bars ours (a later
 * lease's, or a revoke's fence of ours) means our lease has ended. If the work was completed meanwhile
 * (by the holder before us), the grant is given back and the recorded result answered. Whatever fails
 * after the grant gives the grant back first: a failed acquire holds nothing, or says it may
 * (LockOutcomeUnknownError).
 */
async function takeOn(context: EngineContext, request: WorkRequest, grant: Grant, seen: StoredLock | null): Promise<Grant | CompletedWork> {
  const { settings, store } = context;
  const keys = planKeys(request.target, request.mode);
  const taker = {
    lease: grant.leaseId,
    owner: request.owner,
    fencingToken: grant.fencingToken,
    expiresAt: grant.expiresAt,
    locks: keys.map((key) => key.docId),
    ...(request.work.payloadHash !== undefined ? { payloadHash: request.work.payloadHash } : {}),
  };
  try {
    let current = seen;
    for (let round = 0; round < WORK_WRITE_ROUNDS; round++) {
      const now = settings.now();
      // Decided once, at one instant: the answer is the state the decision saw.
      const state = workState(current, now, settings.maxClockSkewMs);
      // Completed, or taken on, for another payload since it was read: the grant is given back (below) and nothing else written.
      const mismatch = mismatchError(request, state);
      if (mismatch) throw mismatch;
      if (state.kind === 'completed') {
        await release(context, ownedTokenOf(context, grant));
        return state.answer;
      }
      const op = claimWorkOp(current, request.target.namespace, request.work.keyHash, taker, now, settings.maxClockSkewMs);
      if (!op) throw inProgress(context, request, current?.body.work?.claim?.owner, current?.body.work?.claim?.claimedAt);
      const { outcomes, read } = await store.writeThenRead([op], taker.locks);
      if (outcomes[0]?.ok) {
        stillHeld(context, request, grant, keys, read);
        return grant;
      }
      current = await readWork(context, request);
    }
    throw inProgress(context, request, undefined, undefined);
  } catch (error) {
    throw await giveBack(context, request, grant, error as Error);
  }
}

/**
 * The read that came after the claim, in its request: every key still holds our lease, with at least
 * half the TTL left by the clock now. Otherwise the claim landed after our lease may have ended (a
 * revoke, a stall): no grant (the claim it left names a lease that is given back, so the next delivery
 * replaces it, and it can record nothing).
 */
function stillHeld(context: EngineContext, request: WorkRequest, grant: Grant, keys: PlannedKey[], read: Map<string, StoredLock | null>): void {
  const { settings } = context;
  const now = settings.now();
  const lost: ConflictingKey[] = [];
  let earliest = Number.POSITIVE_INFINITY;
  for (const key of keys) {
    const lock = read.get(key.docId);
    const mine = lock?.body.holders.find((holder) => holder.lease === grant.leaseId);
    if (mine) {
      earliest = Math.min(earliest, mine.expiresAt);
      continue;
    }
    // Not read (the read failed on its own) counts as lost: nothing is answered that the primary did not show.
    lost.push(lostKey(key, lock, now, settings.maxClockSkewMs));
  }
  if (lost.length > 0) throw new LockHeldError({ conflicts: lost, retryAfterMs: settings.retry.baseDelayMs });
  const left = earliest - now;
  if (left < request.ttlMs / 2) {
    throw new StoreUnavailableError(
      { operation: 'acquire' },
      `Taking the work on stalled (the lock store or this process): its lease would have had ${Math.max(0, left)} ms of ${request.ttlMs} left, so it was given back. Retry.`,
    );
  }
}

/**
 * A woken channel waiter that claims (the same acquire again, without `wake`) and hears `completed`
 * claims nothing: its reservation leaves with its ticket, so the lock is not kept for it the whole
 * claim window. Best effort: a reservation left behind lapses at its end.
 */
async function leaveReservation(context: EngineContext, request: WorkRequest): Promise<void> {
  const keys = planKeys(request.target, request.mode);
  const [only] = keys;
  if (request.wake || request.requestId === undefined || keys.length !== 1 || !only) return;
  const call = callFingerprint(request);
  try {
    const lock = (await context.store.readPrimary([only.docId])).get(only.docId);
    const ticket = lock?.body.queue?.find((waiter) => waiter.request === request.requestId && waiter.call === call && waiter.reservedUntil !== undefined);
    if (ticket) await leaveQueue(context, only, ticket.ticket);
  } catch {
    // Lapses at its end.
  }
}

/**
 * The grant given back after a failure that followed it. A claim whose answer was lost may have
 * landed: it names our lease, which no longer holds the lock, so the next delivery replaces it.
 */
async function giveBack(context: EngineContext, request: WorkRequest, grant: Grant, error: Error): Promise<Error> {
  try {
    await release(context, ownedTokenOf(context, grant));
  } catch (releaseError) {
    const mayHoldUntil = grant.expiresAt + context.settings.maxClockSkewMs;
    return new LockOutcomeUnknownError(
      { operation: 'acquire', ...(request.requestId ? { requestId: request.requestId } : {}), mayHoldUntil, cause: releaseError },
      `Taking the work on failed (${error.message}) and the lock it was granted could not be given back: it stays held until ${new Date(mayHoldUntil).toISOString()} at most. Retry after that.`,
    );
  }
  if (error instanceof StoreUnavailableError && error.context.ambiguous) {
    return new StoreUnavailableError(
      {
        operation: 'acquire',
        cause: error,
      },
      'The lock store failed while the work was being taken on; nothing is held. Retry.',
    );
  }
  return error;
}

/**
 * Records the outcome, then releases. The record is a conditional write on the work's document as
 * the primary has it, claimed by this lease; the primary also confirms that the lease still holds
 * every key of the lock, unexpired. A lease that was taken over, revoked or ran out records nothing
 * (LeaseLostError): its keys are released all the same.
 */
export async function releaseWithRecord(context: EngineContext, token: OwnedToken, record: WorkRecord): Promise<Release> {
  if (!token.work) {
    throw new ValidationError({
      fields: [{ field: 'record', rule: 'needs_idempotency_key', message: 'records the outcome of work: acquire with an idempotencyKey first' }],
    });
  }
  const { keyHash } = token.work;
  const { settings, store } = context;
  const docId = workDocId(token.target.namespace, keyHash);
  const [held, found] = await Promise.all([readOwned(context, token, token.keys, true), store.readPrimary([docId])]);
  let current = found.get(docId) ?? null;
  // A retry of a release whose answer was lost: recorded then, and released (or being released) since.
  if (recordedBy(current, token.leaseId)) return { ...(await release(context, token)), recorded: current!.body.work!.outcome!.status };
  const now = settings.now();
  const ours = held.owned.map((lock) => ({ lock, holder: lock.body.holders.find((holder) => holder.lease === token.leaseId)! }));
  const runOut = ours.filter(({ holder }) => holder.expiresAt <= now).map(({ lock }) => lock.body.key);
  const lost = [...held.missingKeys, ...runOut];
  if (lost.length > 0) return refuse(context, token, lost, 'its lease no longer holds the lock');
  const lease = {
    leaseId: token.leaseId,
    owner: ours[0]?.holder.owner ?? '',
    fencingToken: maxFencingToken(ours.map(({ lock, holder }) => fenceOf(holder, lock))),
  };
  for (let round = 0; round < WORK_WRITE_ROUNDS; round++) {
    const op = recordWorkOp(current, token.target.namespace, keyHash, lease, record, settings.now());
    if (!op)
      return refuse(
        context,
        token,
        [`~work/${keyHash}`],
        'its lease does not have the work (another delivery took it on, a revoke ended it, or it never took it on)',
      );
    const [outcome] = await store.write([op]);
    if (outcome?.ok) return { ...(await release(context, token)), recorded: record.status };
    current = (await store.readPrimary([docId])).get(docId) ?? null;
    if (recordedBy(current, token.leaseId)) return { ...(await release(context, token)), recorded: current!.body.work!.outcome!.status };
  }
  return refuse(context, token, [`~work/${keyHash}`], 'the work document kept changing');
}

async function refuse(context: EngineContext, token: OwnedToken, lostKeys: string[], why: string): Promise<never> {
  await release(context, token).catch(() => undefined);
  throw new LeaseLostError(
    {
      leaseId: token.leaseId,
      lostKeys,
    },
    `The outcome was not recorded: ${why}. Lease ${token.leaseId} is released; a later delivery may run the work again.`,
  );
}

/**
 * Revoke's part (operations/revoke.ts): before its write removes `revoked` from the lock, each one's
 * work is fenced (fenceWorkOp), each on the primary's version, again after a conflict. A record of
 * that lease then no longer applies; one that applied before linearizes as "recorded, then revoked".
 * Throws when a fence cannot be written: the revoke then removes nobody.
 */
export async function fenceRevokedWork(context: EngineContext, namespace: string, revoked: ReadonlyArray<RevokedTaker & { work: string }>): Promise<void> {
  const { settings, store } = context;
  for (const holder of revoked) {
    const docId = workDocId(namespace, holder.work);
    let settled = false;
    for (let round = 0; round < WORK_WRITE_ROUNDS && !settled; round++) {
      const current = (await store.readPrimary([docId])).get(docId) ?? null;
      const op = fenceWorkOp(current, namespace, holder.work, holder, settings.now(), settings.maxClockSkewMs);
      settled = !op || (await store.write([op]))[0]?.ok === true;
    }
    if (!settled) throw new LockContentionError({ keys: [`~work/${holder.work}`], rounds: WORK_WRITE_ROUNDS });
  }
}

/** The refusal of a call whose payload differs from the one the work's record or live claim was for (payloadMismatch). */
function mismatchError(request: WorkRequest, state: WorkState): WorkPayloadMismatchError | undefined {
  const payloadHash = request.work.payloadHash;
  const mismatch = payloadMismatch(state, payloadHash);
  if (!mismatch || payloadHash === undefined) return undefined;
  return new WorkPayloadMismatchError({ keyHash: request.work.keyHash, found: mismatch.found, storedPayloadHash: mismatch.stored, payloadHash });
}

const payloadOf = (lock: StoredLock | null): { payloadHash?: string } =>
  lock?.body.work?.payloadHash !== undefined ? { payloadHash: lock.body.work.payloadHash } : {};

const readWork = async (context: EngineContext, request: WorkRequest): Promise<StoredLock | null> => {
  const docId = workDocId(request.target.namespace, request.work.keyHash);
  return (await context.store.readPrimary([docId])).get(docId) ?? null;
};

function inProgress(
  context: EngineContext,
  request: WorkRequest,
  owner: string | undefined,
  since: number | undefined,
  cause?: LockHeldError,
): WorkInProgressError {
  return new WorkInProgressError({
    keyHash: request.work.keyHash,
    ...(owner !== undefined ? { owner } : {}),
    ...(since !== undefined ? { since } : {}),
    retryAfterMs: cause?.retryAfterMs ?? context.settings.retry.maxDelayMs,
    ...(cause ? { cause } : {}),
  });
}

/** The grant's lease as release takes it. */
function ownedTokenOf(context: EngineContext, grant: Grant): OwnedToken {
  const decoded = decodeToken(grant.leaseToken, context.settings.tokenSigningKey);
  return { ...decoded, keys: planKeys(decoded.target, decoded.mode) };
}
