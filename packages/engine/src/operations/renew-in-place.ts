/**
 * Renewal in place: one request when nothing has written the lease's documents since its own last
 * write. The signed token notes each document's version after that write (its hints); where the lease
 * was alone there (`sole`), the renewal is a conditional write at that version (LockStore.extend),
 * which applies only to the document exactly as the lease left it. Whatever changed it (another
 * holder, a waiter, the sweeper, a revoke, an adoption) makes it fail, and the caller renews that key
 * the other way: a primary read and a write.
 */
import { StoreUnavailableError } from '../errors.js';
import { encodable, LARGEST_TOKEN, tokenAt, type WritePosition } from '../fencing.js';
import { proofOf, type WriteHint } from '../lease-token.js';
import type { ExtendOp, StoredLock } from '../store.js';
import type { EngineContext } from './context.js';
import type { OwnedToken } from './owned.js';

/**
 * The documents renewed in place, by docId (none when the token allows no renewal in place). Only
 * while the token's own expiry, the earliest of its keys', is ahead: a lease that may have run out is
 * judged on the primary's documents. A write whose answer was lost is thrown (it may have applied,
 * perhaps after the lease ran out, which only this write's answer could tell); one refused on its own
 * (say, a cluster that runs no scripts) is left to the other way, as a conflict is.
 */
export async function renewInPlace(context: EngineContext, token: OwnedToken, expiresAt: number): Promise<Map<string, StoredLock>> {
  const renewed = new Map<string, StoredLock>();
  const { store, settings } = context;
  const hints = inPlaceHints(token);
  if (!store.extend || hints.length === 0 || token.expiresAt === undefined || settings.now() >= token.expiresAt) return renewed;
  const proof = proofOf(token.leaseId, token.secret);
  const now = settings.now();
  const outcomes = await store.extend(hints.map((hint) => extendOp(hint, token.leaseId, proof, expiresAt, now)));
  for (const outcome of outcomes) {
    if (outcome.ok) renewed.set(outcome.lock.docId, outcome.lock);
    else if (outcome.reason === 'error' && outcome.error instanceof StoreUnavailableError && outcome.error.context.ambiguous) throw outcome.error;
  }
  return renewed;
}

/** The token's hints of documents it held alone, when it has them for every key (a signed token, from a version with epochs). */
function inPlaceHints(token: OwnedToken): WriteHint[] {
  if (!token.signed) return [];
  const byDoc = new Map(token.hints.map((hint) => [hint.docId, hint]));
  const hints = token.keys.map((key) => byDoc.get(key.docId)).filter((hint) => hint?.sole === true && hint.epoch !== undefined) as WriteHint[];
  return hints.length === token.keys.length ? hints : [];
}

/** The token of the hinted version: a holder that version inserted gets it (as fenceOf gives it). */
const pendingFenceAt = (position: WritePosition) => (encodable(position) ? tokenAt(position) : LARGEST_TOKEN);

const extendOp = (hint: WriteHint, lease: string, proof: string, expiresAt: number, now: number): ExtendOp => ({
  docId: hint.docId,
  index: hint.index,
  ifSeqNo: hint.seqNo,
  ifPrimaryTerm: hint.primaryTerm,
  lease,
  proof,
  expiresAt,
  now,
  pendingFence: pendingFenceAt(hint),
});
