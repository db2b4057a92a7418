/** The fault runner's history checker catches each kind of violation on hand-made histories, and passes a correct one. */
import { describe, expect, it } from 'vitest';
import { checkHistory, holdsOf } from '../../faults/checker.js';
import type { HistoryEvent } from '../../faults/history.js';

const SKEW = { maxClockSkewMs: 50 };
const X = (key: string) => [{ key, mode: 'X' as const }];

/** An acquire that succeeded: invoke then ok. */
function granted(client: string, leaseId: string, at: number, token: string, expiresAt: number, keys: HistoryEvent['keys'] = X('d|a')): HistoryEvent[] {
  return [
    { client, type: 'invoke', op: 'acquire', time: at - 5, keys },
    { client, type: 'ok', op: 'acquire', time: at, leaseId, keys, fencingToken: token, expiresAt },
  ];
}
function released(client: string, leaseId: string, at: number, outcome = 'released'): HistoryEvent[] {
  return [
    { client, type: 'invoke', op: 'release', time: at, leaseId },
    { client, type: 'ok', op: 'release', time: at + 5, leaseId, outcome },
  ];
}
const kinds = (history: HistoryEvent[]) => checkHistory(history, SKEW).map((violation) => violation.kind);

describe('the history checker', () => {
  it('passes a correct history: holds one after the other, a takeover after expiry, growing tokens, an unknown acquire', () => {
    const history: HistoryEvent[] = [
      ...granted('c1', 'l1', 100, '10', 1_100),
      ...released('c1', 'l1', 300),
      ...granted('c2', 'l2', 320, '12', 1_320),
      // c2 dies; c3 takes over after expiry plus skew.
      ...granted('c3', 'l3', 1_400, '15', 2_400),
      { client: 'c4', type: 'invoke', op: 'acquire', time: 1_500, keys: X('d|a') },
      { client: 'c4', type: 'info', op: 'acquire', time: 2_000, error: 'StoreUnavailableError' },
      ...released('c3', 'l3', 2_100),
      // Compatible holders share.
      ...granted('r1', 'l5', 3_000, '20', 4_000, [{ key: 'd|a', mode: 'S' }]),
      ...granted('r2', 'l6', 3_010, '21', 4_010, [{ key: 'd|a', mode: 'S' }]),
    ];
    expect(checkHistory(history, SKEW)).toEqual([]);
  });

  it('catches two exclusive holds at once (overlap beyond the skew), and allows an overlap within it', () => {
    expect(kinds([...granted('c1', 'l1', 100, '10', 1_100), ...granted('c2', 'l2', 500, '11', 1_500)])).toEqual(['overlap']);
    expect(kinds([...granted('c1', 'l1', 100, '10', 1_100), ...granted('c2', 'l2', 1_060, '11', 2_000)])).toEqual([]);
  });

  it('ends a hold at its release invoke and at its expiry, and extends it by a renewal that answered', () => {
    const renewed: HistoryEvent[] = [
      ...granted('c1', 'l1', 100, '10', 1_100),
      { client: 'c1', type: 'invoke', op: 'renew', time: 900, leaseId: 'l1' },
      { client: 'c1', type: 'ok', op: 'renew', time: 910, leaseId: 'l1', fencingToken: '10', expiresAt: 1_910 },
    ];
    expect(holdsOf(renewed)[0]?.endsAt).toBe(1_910);
    expect(kinds([...renewed, ...granted('c2', 'l2', 1_300, '11', 2_300)])).toContain('overlap');
    const failedRenewal: HistoryEvent[] = [...granted('c1', 'l1', 100, '10', 1_100), { client: 'c1', type: 'info', op: 'renew', time: 900, leaseId: 'l1' }];
    expect(kinds([...failedRenewal, ...granted('c2', 'l2', 1_300, '11', 2_300)])).toEqual([]);
  });

  it('catches a fencing inversion, also across a primary-term change', () => {
    expect(kinds([...granted('c1', 'l1', 100, '10', 1_100), ...released('c1', 'l1', 200), ...granted('c2', 'l2', 300, '9', 1_300)])).toEqual(['fencing-order']);
    // Term 2 tokens are larger than any of term 1: a term-1 token after a term-2 one is an inversion.
    const term1 = '10000000000500';
    const term2 = '20000000000003';
    expect(kinds([...granted('c1', 'l1', 100, term2, 1_100), ...released('c1', 'l1', 200), ...granted('c2', 'l2', 300, term1, 1_300)])).toEqual([
      'fencing-order',
    ]);
    expect(kinds([...granted('c1', 'l1', 100, term1, 1_100), ...released('c1', 'l1', 200), ...granted('c2', 'l2', 300, term2, 1_300)])).toEqual([]);
  });

  it('accepts a re-created lock index: a hold of the old incarnation overlapped by the new one, whose tokens carry a larger epoch', () => {
    // Epoch 1, term 1, seq_no 900; epoch 2, term 1, seq_no 3: smaller term and seq_no, larger token.
    const epoch1 = '10001000000000900';
    const epoch2 = '20001000000000003';
    const recreated = [...granted('c1', 'l1', 100, epoch1, 2_100), ...granted('c2', 'l2', 500, epoch2, 2_500)];
    expect(kinds(recreated)).toEqual([]);
    // Within one incarnation it is an overlap still; and the old incarnation's token after the new one's is an inversion.
    expect(kinds([...granted('c1', 'l1', 100, epoch2, 2_100), ...granted('c2', 'l2', 500, '20001000000000009', 2_500)])).toEqual(['overlap']);
    expect(kinds([...granted('c1', 'l1', 100, epoch2, 2_100), ...granted('c2', 'l2', 500, epoch1, 2_500)])).toEqual(['overlap', 'fencing-order']);
    // The old lease is gone: its holder told it still holds after the new grant is a lost grant, whatever the epochs.
    const confirmed: HistoryEvent[] = [
      ...recreated,
      { client: 'c1', type: 'invoke', op: 'renew', time: 600, leaseId: 'l1' },
      { client: 'c1', type: 'ok', op: 'renew', time: 610, leaseId: 'l1', fencingToken: epoch1, expiresAt: 2_610 },
    ];
    expect(kinds(confirmed)).toEqual(['lost-grant']);
  });

  it('catches a lost grant: the first holder told it still holds the key in a call made after the key was given away', () => {
    const lost: HistoryEvent[] = [
      ...granted('c1', 'l1', 100, '10', 1_100),
      ...granted('c2', 'l2', 300, '11', 1_300),
      { client: 'c1', type: 'invoke', op: 'renew', time: 400, leaseId: 'l1' },
      { client: 'c1', type: 'ok', op: 'renew', time: 410, leaseId: 'l1', fencingToken: '10', expiresAt: 1_410 },
    ];
    expect(kinds(lost)).toContain('lost-grant');
    // A release already under way when the key was given away answers "released" afterwards: no violation.
    const inFlight: HistoryEvent[] = [
      ...granted('c1', 'l1', 100, '10', 1_100),
      { client: 'c1', type: 'invoke', op: 'release', time: 250, leaseId: 'l1' },
      ...granted('c2', 'l2', 300, '11', 1_300),
      { client: 'c1', type: 'ok', op: 'release', time: 320, leaseId: 'l1', outcome: 'released' },
    ];
    expect(kinds(inFlight)).toEqual([]);
  });

  it('catches a renew or release with a forged token that succeeded, not one that was refused', () => {
    const base = granted('c1', 'l1', 100, '10', 1_100);
    const thief = (op: 'renew' | 'release', type: 'ok' | 'fail', outcome?: string): HistoryEvent => ({
      client: 'thief',
      type,
      op,
      time: 200,
      leaseId: 'l1',
      forged: true,
      ...(outcome ? { outcome } : {}),
    });
    expect(kinds([...base, thief('renew', 'ok')])).toEqual(['non-holder-succeeded']);
    expect(kinds([...base, thief('release', 'ok', 'released')])).toEqual(['non-holder-succeeded']);
    expect(kinds([...base, thief('release', 'ok', 'not_held'), thief('renew', 'fail')])).toEqual([]);
  });

  it('judges tree holds by their modes on shared keys: writers below a reader conflict, siblings do not', () => {
    const reader = [{ key: 't|/a', mode: 'S' as const }];
    const writerBelow = [
      { key: 't|/a', mode: 'IX' as const },
      { key: 't|/a/b', mode: 'X' as const },
    ];
    const sibling = [
      { key: 't|/a', mode: 'IX' as const },
      { key: 't|/a/c', mode: 'X' as const },
    ];
    expect(kinds([...granted('r', 'l1', 100, '10', 1_100, reader), ...granted('w', 'l2', 200, '11', 1_200, writerBelow)])).toEqual(['overlap']);
    expect(kinds([...granted('w1', 'l1', 100, '10', 1_100, writerBelow), ...granted('w2', 'l2', 200, '11', 1_200, sibling)])).toEqual([]);
  });

  it('lets permit holders of one semaphore share it while their counts fit, and catches more than the limit live at once', () => {
    const permits = (count: number) => [{ key: 'd|sem', mode: 'X' as const, permits: { count, limit: 2 } }];
    const two = [...granted('p1', 'l1', 100, '10', 1_100, permits(1)), ...granted('p2', 'l2', 200, '11', 1_200, permits(1))];
    expect(kinds(two)).toEqual([]);
    expect(kinds([...two, ...granted('p3', 'l3', 300, '12', 1_300, permits(1))])).toEqual(['over-limit']);
    // Within the skew of an expiry, or after a release, the permits are back.
    expect(kinds([...two, ...granted('p3', 'l3', 1_060, '12', 2_000, permits(1))])).toEqual([]);
    expect(kinds([...two, ...released('p1', 'l1', 250), ...granted('p3', 'l3', 300, '12', 1_300, permits(1))])).toEqual([]);
    expect(kinds([...granted('p1', 'l1', 100, '10', 1_100, permits(2)), ...granted('p2', 'l2', 200, '11', 1_200, permits(1))])).toEqual(['over-limit']);
    // To everything else a permit holder is X: a plain lock on the key overlaps it, and fences after it.
    expect(kinds([...granted('p1', 'l1', 100, '10', 1_100, permits(1)), ...granted('c', 'l2', 200, '9', 1_200, X('d|sem'))])).toEqual([
      'overlap',
      'fencing-order',
    ]);
  });

  describe('tree holds, judged by the multi-granularity rules from their paths alone', () => {
    const on = (key: string, mode: 'S' | 'X') => [{ key, mode }];

    it('a lock on /a covers /a/b: X on both at once is an overlap, also deeper and for a reader above a writer', () => {
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a', 'X')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/a/b', 'X'))])).toEqual([
        'overlap',
      ]);
      // The lock below first: /a/b's X is an IX on /a, which /a's X does not admit.
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a/b', 'X')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/a', 'X'))])).toEqual([
        'overlap',
      ]);
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a', 'X')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/a/b/c', 'S'))])).toEqual([
        'overlap',
      ]);
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a', 'S')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/a/b', 'X'))])).toEqual([
        'overlap',
      ]);
      const [violation] = checkHistory(
        [...granted('c1', 'l1', 100, '10', 1_100, on('t|/a', 'X')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/a/b', 'X'))],
        SKEW,
      );
      expect(violation?.at).toBe('t|/a');
      expect(violation?.holds?.map((hold) => [hold.client, hold.key, hold.mode, hold.fencingToken])).toEqual([
        ['c1', 't|/a', 'X', '10'],
        ['c2', 't|/a/b', 'X', '11'],
      ]);
    });

    it('writers of sibling paths, and readers above and below, share', () => {
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a/b', 'X')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/a/c', 'X'))])).toEqual([]);
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a', 'S')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/a/b', 'S'))])).toEqual([]);
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a/b', 'S')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/a', 'S'))])).toEqual([]);
      // A path that only starts like another is not below it; nor are tree, document and global keys one space.
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a', 'X')), ...granted('c2', 'l2', 200, '11', 1_200, on('t|/ab/c', 'X'))])).toEqual([]);
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, on('t|/a', 'X')), ...granted('c2', 'l2', 200, '11', 1_200, on('d|/a', 'X'))])).toEqual([]);
    });

    it('checks fencing order across /a and /a/b, in both orders', () => {
      const above = (at: number, token: string) => granted('c1', 'l1', at, token, at + 1_000, on('t|/a', 'X'));
      const below = (at: number, token: string) => granted('c2', 'l2', at, token, at + 1_000, on('t|/a/b', 'X'));
      expect(kinds([...above(100, '20'), ...released('c1', 'l1', 200), ...below(300, '15')])).toEqual(['fencing-order']);
      expect(kinds([...above(100, '20'), ...released('c1', 'l1', 200), ...below(300, '25')])).toEqual([]);
      expect(kinds([...below(100, '20'), ...released('c2', 'l2', 200), ...above(300, '15')])).toEqual(['fencing-order']);
      expect(kinds([...below(100, '20'), ...released('c2', 'l2', 200), ...above(300, '25')])).toEqual([]);
      // Compatible holds may come in any token order: sibling writers, readers above and below.
      const sibling = granted('c3', 'l3', 300, '15', 1_300, on('t|/a/c', 'X'));
      expect(kinds([...below(100, '20'), ...released('c2', 'l2', 200), ...sibling])).toEqual([]);
    });

    it('catches a lost grant across levels: a renewal of /a/b confirmed after /a was given away', () => {
      const history: HistoryEvent[] = [
        ...granted('c1', 'l1', 100, '10', 1_100, on('t|/a/b', 'X')),
        ...granted('c2', 'l2', 300, '11', 1_300, on('t|/a', 'S')),
        { client: 'c1', type: 'invoke', op: 'renew', time: 400, leaseId: 'l1' },
        { client: 'c1', type: 'ok', op: 'renew', time: 410, leaseId: 'l1', fencingToken: '10', expiresAt: 1_410 },
      ];
      expect(kinds(history).sort()).toEqual(['lost-grant', 'overlap']);
    });

    it('reports a pair once per kind even when it meets on several nodes (a set of two document keys)', () => {
      const both = [
        { key: 'd|k0', mode: 'X' as const },
        { key: 'd|k1', mode: 'X' as const },
      ];
      expect(kinds([...granted('c1', 'l1', 100, '10', 1_100, both), ...granted('c2', 'l2', 200, '9', 1_200, both)])).toEqual(['overlap', 'fencing-order']);
    });

    it('checks a long history in linear time per node (50,000 holds one after the other)', () => {
      const history: HistoryEvent[] = [];
      for (let index = 0; index < 50_000; index++) {
        const leaseId = `l${index}`;
        const key = index % 3 === 0 ? 't|/d0' : `t|/d0/f${index % 4}`;
        history.push(
          ...granted(`c${index % 8}`, leaseId, index * 10, String(index + 1), index * 10 + 2_000, on(key, 'X')),
          ...released(`c${index % 8}`, leaseId, index * 10 + 5),
        );
      }
      const started = Date.now();
      expect(checkHistory(history, SKEW)).toEqual([]);
      expect(Date.now() - started).toBeLessThan(10_000);
    });
  });
});
