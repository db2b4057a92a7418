/**
 * Fencing tokens come from Elasticsearch itself: the (_primary_term, _seq_no) of the write that
 * granted the lease, above the lock index's incarnation epoch. Every key of a namespace lives on one
 * primary shard (requests are routed by namespace), where that pair only grows, across every key of
 * the namespace, release, takeover and primary promotion, so a later grant on a key always carries a
 * larger number. Tokens of different namespaces on different shards are not ordered. A new
 * incarnation of the lock index (re-created, or restored from a snapshot) restarts the pair, so each
 * incarnation carries an epoch one above the previous one's
 * (functions/store/lock-index.ts): its tokens start above every token the earlier one could issue.
 *
 * Encoding: `epoch × 10¹⁶ + primaryTerm × 10¹³ + seqNo`, as a decimal string. The value fits a signed
 * 64-bit integer (Elasticsearch `long`, `version_type=external`, Java `long`, Go `int64`), which JSON
 * numbers cannot carry exactly past 2⁵³, hence the string. 10¹³ sequence numbers last 30 years at
 * 10,000 lock writes a second; 999 primary terms are as many promotions of the lock shard within one
 * incarnation, and 921 epochs as many incarnations. Epoch 0 (a lock index made before epochs) gives
 * the tokens it always gave.
 */
import { FencingRangeError } from './errors.js';
import type { FencingToken } from './model.js';

export type { FencingToken } from './model.js';

/** Where a write landed: what a fencing token is made of. `epoch` is the lock index incarnation's (0 when absent). */
export interface WritePosition {
  primaryTerm: number;
  seqNo: number;
  epoch?: number;
}

export const SEQ_NO_SPAN = 10n ** 13n;
export const TERM_SPAN = 1_000;
export const MAX_PRIMARY_TERM = TERM_SPAN - 1;
export const MAX_EPOCH = 921;
const EPOCH_SPAN = SEQ_NO_SPAN * BigInt(TERM_SPAN);
const MAX_SEQ_NO = SEQ_NO_SPAN - 1n;
const SEQ_NO_SPAN_NUMBER = 1e13;
const MAX_SEQ_NO_NUMBER = SEQ_NO_SPAN_NUMBER - 1;
const SAFE_TERM = Math.floor((Number.MAX_SAFE_INTEGER - MAX_SEQ_NO_NUMBER) / SEQ_NO_SPAN_NUMBER);

export function fencingToken(primaryTerm: number, seqNo: number, epoch = 0): FencingToken {
  if (!Number.isSafeInteger(epoch) || epoch < 0 || epoch > MAX_EPOCH) {
    throw new FencingRangeError({ primaryTerm, seqNo }, `lock index epoch ${epoch} is outside the encodable range 0..${MAX_EPOCH}`);
  }
  if (!Number.isSafeInteger(primaryTerm) || primaryTerm < 1 || primaryTerm > MAX_PRIMARY_TERM) {
    throw new FencingRangeError({ primaryTerm, seqNo }, `primary term ${primaryTerm} is outside the encodable range 1..${MAX_PRIMARY_TERM}`);
  }
  if (!Number.isSafeInteger(seqNo) || seqNo < 0 || seqNo > MAX_SEQ_NO_NUMBER) {
    throw new FencingRangeError({ primaryTerm, seqNo }, `sequence number ${seqNo} is outside the encodable range 0..${MAX_SEQ_NO}`);
  }
  // Plain arithmetic is exact while the result stays below 2^53 (epoch 0, terms up to 900): the common case, and cheaper than BigInt.
  if (epoch === 0 && primaryTerm <= SAFE_TERM) return String(primaryTerm * SEQ_NO_SPAN_NUMBER + seqNo);
  return (BigInt(epoch) * EPOCH_SPAN + BigInt(primaryTerm) * SEQ_NO_SPAN + BigInt(seqNo)).toString();
}

/** The token of the write at `position`. */
export const tokenAt = (position: WritePosition): FencingToken => fencingToken(position.primaryTerm, position.seqNo, position.epoch ?? 0);

/** Whether the position can be encoded; a write outside the range must never become a grant. */
export function encodable(position: WritePosition): boolean {
  const { primaryTerm, seqNo, epoch = 0 } = position;
  return (
    Number.isSafeInteger(epoch) &&
    epoch >= 0 &&
    epoch <= MAX_EPOCH &&
    Number.isSafeInteger(primaryTerm) &&
    primaryTerm >= 1 &&
    primaryTerm <= MAX_PRIMARY_TERM &&
    Number.isSafeInteger(seqNo) &&
    seqNo >= 0 &&
    seqNo <= MAX_SEQ_NO_NUMBER
  );
}

/** The largest encodable token: what a holder left by a write past the range gets, so that it never wedges its document. */
export const LARGEST_TOKEN: FencingToken = (BigInt(MAX_EPOCH) * EPOCH_SPAN + BigInt(MAX_PRIMARY_TERM) * SEQ_NO_SPAN + MAX_SEQ_NO).toString();

/** Decimal integers without leading zeros: the longer is larger, and equal lengths compare as text. */
export function compareFencingTokens(a: FencingToken, b: FencingToken): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function maxFencingToken(tokens: readonly FencingToken[]): FencingToken {
  return tokens.reduce((best, token) => (compareFencingTokens(token, best) > 0 ? token : best));
}
