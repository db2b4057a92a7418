/**
 * Fencing tokens come from Elasticsearch itself: the (_primary_term, _seq_no) of the write that
 * granted the lease. With one primary shard that pair only grows, across every key, release,
 * takeover and primary promotion, so a later grant on a key always carries a larger number.
 * It resets only if the lock index is deleted and created again.
 *
 * Encoding: `primaryTerm × 10¹³ + seqNo`, as a decimal string. The value fits a signed 64-bit
 * integer (Elasticsearch `long`, `version_type=external`, Java `long`, Go `int64`), which JSON
 * numbers cannot carry exactly past 2⁵³, hence the string. 10¹³ sequence numbers last 30 years at
 * 10,000 lock writes a second; 922,336 primary terms are as many promotions of the lock shard.
 */
import { FencingRangeError } from './errors.js';

/** A decimal integer string; compare with `compareFencingTokens` or `BigInt`, never as text of different lengths. */
export type FencingToken = string;

export const SEQ_NO_SPAN = 10n ** 13n;
export const MAX_PRIMARY_TERM = 922_336;
const MAX_SEQ_NO = SEQ_NO_SPAN - 1n;
const SEQ_NO_SPAN_NUMBER = 1e13;
const MAX_SEQ_NO_NUMBER = SEQ_NO_SPAN_NUMBER - 1;
const SAFE_TERM = Math.floor((Number.MAX_SAFE_INTEGER - MAX_SEQ_NO_NUMBER) / SEQ_NO_SPAN_NUMBER);

export function fencingToken(primaryTerm: number, seqNo: number): FencingToken {
  if (!Number.isSafeInteger(primaryTerm) || primaryTerm < 1 || primaryTerm > MAX_PRIMARY_TERM) {
    throw new FencingRangeError(`primary term ${primaryTerm} is outside the encodable range 1..${MAX_PRIMARY_TERM}`, { primaryTerm, seqNo });
  }
  if (!Number.isSafeInteger(seqNo) || seqNo < 0 || seqNo > MAX_SEQ_NO_NUMBER) {
    throw new FencingRangeError(`sequence number ${seqNo} is outside the encodable range 0..${MAX_SEQ_NO}`, { primaryTerm, seqNo });
  }
  // Plain arithmetic is exact while the result stays below 2^53 (terms up to 900): the common case, and cheaper than BigInt.
  return primaryTerm <= SAFE_TERM ? String(primaryTerm * SEQ_NO_SPAN_NUMBER + seqNo) : (BigInt(primaryTerm) * SEQ_NO_SPAN + BigInt(seqNo)).toString();
}

/** Whether (term, seqNo) can be encoded; a write outside the range must never become a grant. */
export function encodable(primaryTerm: number, seqNo: number): boolean {
  return (
    Number.isSafeInteger(primaryTerm) &&
    primaryTerm >= 1 &&
    primaryTerm <= MAX_PRIMARY_TERM &&
    Number.isSafeInteger(seqNo) &&
    seqNo >= 0 &&
    seqNo <= MAX_SEQ_NO_NUMBER
  );
}

/** Decimal integers without leading zeros: the longer is larger, and equal lengths compare as text. */
export function compareFencingTokens(a: FencingToken, b: FencingToken): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function maxFencingToken(tokens: readonly FencingToken[]): FencingToken {
  return tokens.reduce((best, token) => (compareFencingTokens(token, best) > 0 ? token : best));
}
