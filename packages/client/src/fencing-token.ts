/**
 * Fencing tokens: non-negative integers carried as decimal strings (they pass 2^53, which a JSON
 * number cannot carry exactly), without padding, so two tokens can differ in length (a token of
 * the lock index's epoch 10 is one digit longer than one of epoch 9). Compare them as integers,
 * never as text: `'10000000000000000' < '9999999999999999'` is true as strings.
 */

/** Orders two fencing tokens as the integers they are: negative when `a` is older, 0 when equal, positive when `a` is newer. */
export function compareFencingTokens(a: string, b: string): number {
  const left = BigInt(a);
  const right = BigInt(b);
  return left < right ? -1 : left > right ? 1 : 0;
}

/** Whether `candidate` is a later grant's token than `than` (strictly larger as an integer). */
export const isNewerFencingToken = (candidate: string, than: string): boolean => compareFencingTokens(candidate, than) > 0;
