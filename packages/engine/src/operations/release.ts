/**
 * Release: give the lease up on every key. Releasing something already gone is an outcome, not an
 * error; a token whose secret does not match changes nothing (LeaseTokenMismatchError).
 */
import type { Release } from '../model.js';
import type { WriteOp } from '../store.js';
import type { EngineContext } from './context.js';
import { type OwnedToken, readOwned } from './owned.js';
import { removeLease } from './remove-lease.js';

export async function release(context: EngineContext, token: OwnedToken): Promise<Release> {
  const now = context.settings.now();
  let remaining = token.keys;
  // Past its end when released: for a document deleted on the fast path the token's own expiry is
  // exact (the document was as the token's write left it); for the others the documents say.
  let expired = false;

  // Signed token, and we were alone on every document at our last write: each document is exactly as
  // that write left it (then deleting it releases only us), or its delete fails and we read it.
  const hints = new Map(token.hints.map((hint) => [hint.docId, hint]));
  if (token.signed && token.keys.every((key) => hints.get(key.docId)?.sole)) {
    const outcomes = await context.store.write(
      token.keys.map((key) => {
        const hint = hints.get(key.docId)!;
        // Aimed at the incarnation the hint was made in: in a re-created index the same (seq_no, term) names someone else's lock.
        return { kind: 'delete', docId: key.docId, ifSeqNo: hint.seqNo, ifPrimaryTerm: hint.primaryTerm, index: hint.index } satisfies WriteOp;
      }),
    );
    remaining = token.keys.filter((_, index) => !outcomes[index]!.ok);
    if (remaining.length < token.keys.length && token.expiresAt !== undefined && token.expiresAt <= now) expired = true;
  }

  let missing: string[] = [];
  let handedOver = 0;
  if (remaining.length > 0) {
    const { owned, missingKeys, without } = await readOwned(context, token, remaining);
    const afterRead = context.settings.now();
    // Documents that lost the lease to a later delivery of its call are passed too: that delivery must
    // not give the key back to a lease that has been released.
    // A directory (or namespace root) that its exclusive holder leaves as it found it loses its mark, so
    // that the next lock on it skips the search below (removeLeaseOp says why that is safe).
    const result = await removeLease(context, [...owned, ...without], token.leaseId, false, true);
    // Judged on the holders the conditional deletes removed (the primary's versions), not on the read, which a lagging copy may have answered.
    expired ||= result.removed.some((holder) => holder.expiresAt <= afterRead);
    missing = [...new Set([...missingKeys, ...result.missing])];
    handedOver = result.handedOver;
  }
  return {
    leaseId: token.leaseId,
    outcome: missing.length === token.keys.length ? 'not_held' : missing.length > 0 ? 'partially_held' : expired ? 'expired' : 'released',
    releasedKeys: token.keys.map((key) => key.key).filter((key) => !missing.includes(key)),
    missingKeys: missing,
    ...(token.grantedAt !== undefined ? { heldMs: Math.max(0, now - token.grantedAt) } : {}),
    handedOver,
  };
}
