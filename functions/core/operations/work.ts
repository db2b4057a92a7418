/**
 * Work that runs once (docs/protocol.md, "Work that runs once"). An acquire with an idempotency key
 * answers the recorded result when the work was completed; otherwise it takes the lock (exclusively)
 * and then takes the work on, on the work's own document. Its release may record the outcome, which
 * only the lease that took the work on last can do, and only while it still holds the lock.
 */
import { LeaseLostError, LockHeldError, LockOutcomeUnknownError, StoreUnavailableError, ValidationError, WorkInProgressError } from '../errors.js';
import { maxFencingToken } from '../fencing.js';
import { planKeys } from '../keys.js';
import { decodeToken } from '../lease-token.js';
import { fenceOf } from '../lock-document.js';
import type { AcquireRequest, CompletedWork, Grant, Queued, Release, WorkRecord } from '../model.js';
import type { StoredLock } from '../store.js';
import { claimWorkOp, recordedBy, recordWorkOp, workDocId, workState } from '../work.js';
import { acquireOrQueue } from './acquire.js';
import type { EngineContext } from './context.js';
import { type OwnedToken, readOwned } from './owned.js';
import { release } from './release.js';

/** How many times a write on the work document is tried again after someone changed it in between. */
const WORK_WRITE_ROUNDS = 4;

type WorkRequest = AcquireRequest & { work: { keyHash: string } };

export async function acquireWork(context: EngineContext, request: WorkRequest): Promise<Grant | Queued | CompletedWork> {
  const seen = await readWork(context, request);
  const state = workState(seen, context.settings.now(), context.settings.maxClockSkewMs);
  if (state.kind === 'completed') return state.answer;
  // A caller that will not wait hears "in progress" at once; one that waits waits for the lock (its taker holds it).
  if (state.kind === 'in_progress' && request.waitMs === 0 && !request.wake) throw inProgress(context, request, state.owner, state.since);
  let granted: Grant | Queued;
  try {
    granted = await acquireOrQueue(context, request);
  } catch (error) {
    // Held by another delivery of this call, or by someone while the work has a taker (which renewed past its claim's end, most likely).
    if (error instanceof LockHeldError) {
      const claim = seen?.body.work?.claim;
      if (claim) throw inProgress(context, request, claim.owner, claim.claimedAt, error);
      if (error.conflicts.some((conflict) => conflict.reason === 'duplicate_in_progress')) throw inProgress(context, request, undefined, undefined, error);
    }
    throw error;
  }
  if ('status' in granted) return granted;
  return takeOn(context, request, granted, seen);
}

/**
 * Takes the work on under the grant, on the version read before (or re-read when it changed). We hold
 * the lock exclusively, so a claim by another lease is stale: that lease no longer holds the lock.
 * If the work was completed meanwhile (by the holder before us), the grant is given back and the
 * recorded result answered. Whatever fails after the grant gives the grant back first: a failed
 * acquire holds nothing, or says it may (LockOutcomeUnknownError).
 */
async function takeOn(context: EngineContext, request: WorkRequest, grant: Grant, seen: StoredLock | null): Promise<Grant | CompletedWork> {
  const { settings, store } = context;
  try {
    let current = seen;
    for (let round = 0; round < WORK_WRITE_ROUNDS; round++) {
      const now = settings.now();
      // Decided once, at one instant: the answer is the state the decision saw.
      const state = workState(current, now, settings.maxClockSkewMs);
      if (state.kind === 'completed') {
        await release(context, ownedTokenOf(context, grant));
        return state.answer;
      }
      const taker = { lease: grant.leaseId, owner: request.owner, fencingToken: grant.fencingToken, expiresAt: grant.expiresAt };
      const [outcome] = await store.write([claimWorkOp(current, request.target.namespace, request.work.keyHash, taker, now)!]);
      if (outcome?.ok) return grant;
      current = await readWork(context, request);
    }
    throw inProgress(context, request, undefined, undefined);
  } catch (error) {
    throw await giveBack(context, request, grant, error as Error);
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
    if (!op) return refuse(context, token, [`~work/${keyHash}`], 'another delivery has taken the work on since');
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
