/**
 * Fencing tokens compare as integers, never as strings (issue 30, item 9). No server: pure functions.
 *
 * Tokens are `epoch × 10^16 + primaryTerm × 10^13 + seqNo` as an unpadded decimal string
 * (packages/engine/src/fencing.ts), so a later token can be a digit longer. The wire contract used to say
 * they were zero-padded and compared as strings; a string comparison puts these later tokens below
 * the earlier ones, which the checks below would catch (`'10000000000000000' < '9999999999999999'`).
 */
import { describe, expect, it } from 'vitest';
import { compareFencingTokens, isNewerFencingToken } from '../../packages/client/src/index.js';
import { compareFencingTokens as compareInEngine, fencingToken } from '../../packages/engine/src/fencing.js';

describe('fencing token comparison across a change of length', () => {
  it('orders 9999999999999999 below 10000000000000000 (a string comparison gets it backwards)', () => {
    const shorter = '9999999999999999';
    const longer = '10000000000000000';
    expect(longer < shorter).toBe(true); // as strings: the wrong order
    expect(compareFencingTokens(shorter, longer)).toBeLessThan(0);
    expect(compareFencingTokens(longer, shorter)).toBeGreaterThan(0);
    expect(compareFencingTokens(longer, longer)).toBe(0);
    expect(isNewerFencingToken(longer, shorter)).toBe(true);
    expect(isNewerFencingToken(shorter, longer)).toBe(false);
    expect(isNewerFencingToken(longer, longer)).toBe(false);
  });

  it('orders every token of epoch 10 above every token of epoch 9, as the engine makes them', () => {
    const lastOfEpoch9 = fencingToken(999, 1e13 - 1, 9);
    const firstOfEpoch10 = fencingToken(1, 0, 10);
    expect(firstOfEpoch10.length).toBe(lastOfEpoch9.length + 1);
    expect(firstOfEpoch10 < lastOfEpoch9).toBe(true); // as strings: the wrong order
    expect(isNewerFencingToken(firstOfEpoch10, lastOfEpoch9)).toBe(true);
    expect(compareFencingTokens(lastOfEpoch9, firstOfEpoch10)).toBeLessThan(0);
    // The engine's own comparison (packages/engine/src/fencing.ts) agrees.
    expect(compareInEngine(firstOfEpoch10, lastOfEpoch9)).toBeGreaterThan(0);
  });

  it('agrees with BigInt on tokens past 2^53 and sorts a mixed list as integers', () => {
    const tokens = [fencingToken(3, 7, 10), '9007199254740993', fencingToken(2, 5, 9), '9007199254740992', fencingToken(1, 42), '7'];
    const sorted = [...tokens].sort(compareFencingTokens);
    expect(sorted).toEqual([...tokens].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0)));
    expect(sorted).toEqual(['7', '10000000000042', '9007199254740992', '9007199254740993', fencingToken(2, 5, 9), fencingToken(3, 7, 10)]);
  });
});
