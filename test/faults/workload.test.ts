/** The fault runner's workload: what the clients lock, and how their clocks are skewed. */
import { describe, expect, it } from 'vitest';
import { behaviourOf, DESCRIPTIONS, FAULTS, SHORT_FAULTS } from '../../faults/catalog.js';
import { clockOffsets } from '../../faults/skew.js';
import { pickTarget, type Workload } from '../../faults/workload.js';

/** A seeded generator, so that the counts below do not depend on chance. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const MIXED: Workload = { granularity: 'mixed', keys: 4, directories: 3, workMs: { min: 20, max: 80 } };

describe('the workload', () => {
  it('mixes document locks (one or two ids) with tree locks on directories and files', () => {
    const random = seeded(7);
    const targets = Array.from({ length: 2_000 }, () => pickTarget(MIXED, random));
    const documents = targets.filter((target) => target.request.granularity === 'document');
    const paths = targets.flatMap((target) => (target.request.granularity === 'tree' ? [target.request.path] : []));
    expect(documents.length / targets.length).toBeGreaterThan(0.4);
    expect(documents.length / targets.length).toBeLessThan(0.6);
    expect(documents.some((target) => target.request.granularity === 'document' && target.request.ids.length === 2)).toBe(true);
    expect(new Set(documents.flatMap((target) => (target.request.granularity === 'document' ? target.request.ids : [])))).toEqual(
      new Set(['k0', 'k1', 'k2', 'k3']),
    );
    const directories = paths.filter((path) => /^\/d\d$/.test(path));
    expect(new Set(directories)).toEqual(new Set(['/d0', '/d1', '/d2']));
    expect(paths.every((path) => /^\/d[0-2](\/f[0-3])?$/.test(path))).toBe(true);
    expect(directories.length / paths.length).toBeGreaterThan(0.08);
    expect(directories.length / paths.length).toBeLessThan(0.25);
  });

  it('names what the checker judges: each document, or the tree path alone (the checker derives the intentions above it)', () => {
    const random = seeded(3);
    const targets = Array.from({ length: 200 }, () => pickTarget(MIXED, random));
    const tree = targets.find((target) => target.request.granularity === 'tree' && target.request.path.includes('/f'))!;
    const path = tree.request.granularity === 'tree' ? tree.request.path : '';
    expect(tree.keys(true)).toEqual([{ key: `t|${path}`, mode: 'X' }]);
    expect(tree.keys(false)).toEqual([{ key: `t|${path}`, mode: 'S' }]);
    const pair = targets.find((target) => target.request.granularity === 'document' && target.request.ids.length === 2)!;
    expect(pair.keys(true).map((held) => held.mode)).toEqual(['X', 'X']);
    expect(pair.keys(true).every((held) => held.key.startsWith('d|k'))).toBe(true);
  });

  it('restricts to one granularity, and gives a faulty acquire a target of more than one store call', () => {
    const random = seeded(11);
    const documentsOnly = Array.from({ length: 300 }, () => pickTarget({ ...MIXED, granularity: 'document' }, random));
    expect(documentsOnly.every((target) => target.request.granularity === 'document')).toBe(true);
    const treeOnly = Array.from({ length: 300 }, () => pickTarget({ ...MIXED, granularity: 'tree' }, random));
    expect(treeOnly.every((target) => target.request.granularity === 'tree')).toBe(true);
    const twoStep = Array.from({ length: 300 }, () => pickTarget(MIXED, random, true));
    for (const target of twoStep) {
      if (target.request.granularity === 'document') expect(target.request.ids).toHaveLength(2);
      else expect(target.request.path).toMatch(/^\/d\d$/);
    }
  });
});

describe('clock skew', () => {
  it('spreads the clients over the range, ahead and behind, the extreme two exactly the range apart', () => {
    const offsets = clockOffsets(8, 500);
    expect(Math.min(...offsets)).toBe(-250);
    expect(Math.max(...offsets)).toBe(250);
    expect(new Set(offsets).size).toBe(8);
    // Alternating: the first two clients already differ by the whole range.
    expect(offsets.slice(0, 2)).toEqual([-250, 250]);
    expect(clockOffsets(2, 2_500)).toEqual([-1_250, 1_250]);
    expect(clockOffsets(1, 500)).toEqual([0]);
    expect(clockOffsets(4, 0)).toEqual([0, 0, 0, 0]);
  });

  it("keeps clock-skew within the engine's allowance and puts clock-skew-beyond at five times it, with crashes so that leases are taken over", () => {
    const within = behaviourOf('clock-skew');
    const beyond = behaviourOf('clock-skew-beyond');
    expect(within.clockSpreadMs).toBe(within.maxClockSkewMs);
    expect(within.maxClockSkewMs).toBe(500);
    expect(beyond.clockSpreadMs).toBe(5 * beyond.maxClockSkewMs);
    expect(within.crashRate).toBeGreaterThan(0);
    expect(beyond.crashRate).toBeGreaterThan(0);
  });

  it('--short has a partition (drop), clock skew within the bound, and not the demonstration beyond it', () => {
    expect(SHORT_FAULTS).toContain('partition-drop');
    expect(SHORT_FAULTS).toContain('clock-skew');
    expect(SHORT_FAULTS).not.toContain('clock-skew-beyond');
    expect(FAULTS).toContain('clock-skew-beyond');
  });

  it('lists recreate-index among the faults, described, and keeps --short to a failover, a partition and skewed clocks', () => {
    expect(FAULTS).toContain('recreate-index');
    expect(Object.keys(DESCRIPTIONS).sort()).toEqual([...FAULTS].sort());
    expect(SHORT_FAULTS).toEqual(['kill-primary', 'partition-drop', 'clock-skew']);
    expect(behaviourOf('recreate-index').crashRate).toBe(0);
  });
});
