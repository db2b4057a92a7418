/**
 * Renewal in place: one request when nothing has written the lease's documents since its own last
 * write. The signed token notes each document's version after that write and, where the lease held it
 * alone with nothing else on it, how to write it again (renewal-recipe.ts). The renewal is then one
 * conditional replace at that version: it applies only to the document exactly as the lease left it,
 * so it writes the same document a renewal that read it would. Whatever wrote it since (another
 * holder, a waiter, the sweeper, a revoke, an adoption or a re-creation) makes it fail, and the caller
 * renews that key the other way: a read and a write.
 */
import { encodable, LARGEST_TOKEN, tokenAt, type WritePosition } from '../fencing.js';
import { proofOf, type WriteHint } from '../lease-token.js';
import { writtenLock } from '../lock-document.js';
import type { PlannedKey } from '../model.js';
import { rebuiltDocument } from '../renewal-recipe.js';
import type { StoredLock, WriteOp } from '../store.js';
import type { EngineContext } from './context.js';
import type { OwnedToken } from './owned.js';

export interface InPlace {
  /** The documents renewed in place, by docId. */
  renewed: Map<string, StoredLock>;
  /** The others (changed since), as the primary has them after the writes: the renewal goes on from these, with no read of its own. */
  current: Map<string, StoredLock | null>;
}

/**
 * One request (none when the token allows no renewal in place): the writes, then a primary read of
 * each document in the same request, so that a document that changed costs no second read. Only
 * while the token's own expiry, the earliest of its keys', is ahead: a lease that may have run out is
 * judged on the primary's documents. A write that failed on its own is thrown, as the write loop
 * throws it (one whose answer was lost may have applied).
 */
export async function renewInPlace(context: EngineContext, token: OwnedToken, expiresAt: number): Promise<InPlace> {
  const renewed = new Map<string, StoredLock>();
  const current = new Map<string, StoredLock | null>();
  const { store, settings } = context;
  const planned = inPlaceKeys(token);
  const now = settings.now();
  if (planned.length === 0 || token.expiresAt === undefined || now >= token.expiresAt) return { renewed, current };
  const lease = { leaseId: token.leaseId, proof: proofOf(token.leaseId, token.secret) };
  const ops = planned.map(({ key, hint }) => replaceInPlace(key, hint, lease, expiresAt, now));
  const { outcomes, read } = await store.writeThenRead(
    ops,
    ops.map((op) => op.docId),
  );
  outcomes.forEach((outcome, position) => {
    if (outcome.ok) renewed.set(outcome.docId, writtenLock(outcome, ops[position]!.body));
    else if (outcome.reason === 'error') throw outcome.error;
    else if (read.has(outcome.docId)) current.set(outcome.docId, read.get(outcome.docId)!);
  });
  return { renewed, current };
}

type InPlaceHint = WriteHint & Required<Pick<WriteHint, 'inPlace'>>;

/** Every key with its hint, when each has a renewal in place (a signed token whose lease held each document alone); else none. */
function inPlaceKeys(token: OwnedToken): Array<{ key: PlannedKey; hint: InPlaceHint }> {
  if (!token.signed) return [];
  const byDoc = new Map(token.hints.map((hint) => [hint.docId, hint]));
  const planned = token.keys.flatMap((key) => {
    const hint = byDoc.get(key.docId);
    return hint?.inPlace ? [{ key, hint: hint as InPlaceHint }] : [];
  });
  return planned.length === token.keys.length ? planned : [];
}

/** The token of the noted version: a holder that version inserted gets it (as fenceOf gives it). */
const pendingFenceAt = (position: WritePosition) => (encodable(position) ? tokenAt(position) : LARGEST_TOKEN);

function replaceInPlace(
  key: PlannedKey,
  hint: InPlaceHint,
  lease: { leaseId: string; proof: string },
  expiresAt: number,
  now: number,
): Extract<WriteOp, { kind: 'replace' }> {
  const { epoch, recipe } = hint.inPlace;
  return {
    kind: 'replace',
    docId: key.docId,
    // Aimed at the incarnation the hint was made in: in a re-created index the same (seq_no, term) names someone else's lock.
    index: hint.index,
    ifSeqNo: hint.seqNo,
    ifPrimaryTerm: hint.primaryTerm,
    body: rebuiltDocument(key, recipe, lease, expiresAt, now, pendingFenceAt({ primaryTerm: hint.primaryTerm, seqNo: hint.seqNo, epoch })),
  };
}
