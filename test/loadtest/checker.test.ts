import { describe, expect, it } from 'vitest';
import { checkHolds, formatSafety, type HoldRecord, holdsConflict, parseHoldLog } from '../../loadtests/runner/checker.js';

let fence = 100;
function hold(partial: Partial<HoldRecord> & Pick<HoldRecord, 'granularity' | 'start' | 'end'>): HoldRecord {
  return {
    namespace: `lt-${partial.granularity}`,
    op: partial.mode === 'shared' ? 'read' : 'edit',
    mode: 'exclusive',
    keys: partial.granularity === 'global' ? ['*'] : ['/a/f.txt'],
    fence: fence++,
    expiresAt: partial.start + 15_000,
    owner: 'vu1',
    release: 'released',
    ...partial,
  };
}

describe('holdsConflict', () => {
  it('global: everything except shared/shared', () => {
    const x = hold({ granularity: 'global', start: 0, end: 1 });
    const s = hold({ granularity: 'global', mode: 'shared', start: 0, end: 1 });
    expect(holdsConflict(x, s)).toBe(true);
    expect(holdsConflict(s, { ...s })).toBe(false);
    expect(holdsConflict(x, { ...x })).toBe(true);
  });

  it('document: overlapping ids with at least one exclusive', () => {
    const a = hold({ granularity: 'document', keys: ['/a/1', '/a/2'], start: 0, end: 1 });
    expect(holdsConflict(a, hold({ granularity: 'document', keys: ['/a/2'], start: 0, end: 1 }))).toBe(true);
    expect(holdsConflict(a, hold({ granularity: 'document', keys: ['/a/3'], start: 0, end: 1 }))).toBe(false);
    expect(holdsConflict({ ...a, mode: 'shared' }, hold({ granularity: 'document', mode: 'shared', keys: ['/a/1'], start: 0, end: 1 }))).toBe(false);
  });

  it('tree: equal or ancestor paths with at least one exclusive, not siblings or name prefixes', () => {
    const dir = hold({ granularity: 'tree', keys: ['/a/b'], start: 0, end: 1 });
    expect(holdsConflict(dir, hold({ granularity: 'tree', keys: ['/a/b/c.txt'], mode: 'shared', start: 0, end: 1 }))).toBe(true);
    expect(holdsConflict(hold({ granularity: 'tree', keys: ['/a'], mode: 'shared', start: 0, end: 1 }), dir)).toBe(true);
    expect(holdsConflict(dir, hold({ granularity: 'tree', keys: ['/a/bc'], start: 0, end: 1 }))).toBe(false);
    expect(holdsConflict(dir, hold({ granularity: 'tree', keys: ['/a/x'], start: 0, end: 1 }))).toBe(false);
  });

  it('never across granularities or namespaces', () => {
    const a = hold({ granularity: 'global', start: 0, end: 1 });
    expect(holdsConflict(a, { ...a, namespace: 'other' })).toBe(false);
    expect(holdsConflict(a, hold({ granularity: 'document', keys: ['*'], start: 0, end: 1 }))).toBe(false);
  });
});

describe('checkHolds: clean histories pass', () => {
  it('sequential exclusive holds with growing fences, back to back', () => {
    const report = checkHolds([
      hold({ granularity: 'global', start: 0, end: 10, fence: 1 }),
      hold({ granularity: 'global', start: 10, end: 20, fence: 2 }),
      hold({ granularity: 'global', start: 25, end: 30, fence: 7 }),
    ]);
    expect(report.ok).toBe(true);
    expect(report.violationCount).toBe(0);
    expect(report.holds).toBe(3);
  });

  it('overlapping shared holds, disjoint documents, sibling tree paths', () => {
    const report = checkHolds([
      hold({ granularity: 'global', mode: 'shared', start: 0, end: 50, fence: 5 }),
      hold({ granularity: 'global', mode: 'shared', start: 10, end: 20, fence: 3 }),
      hold({ granularity: 'document', keys: ['/a/1'], start: 0, end: 50, fence: 9 }),
      hold({ granularity: 'document', keys: ['/a/2', '/a/3'], start: 5, end: 40, fence: 2 }),
      hold({ granularity: 'tree', keys: ['/a/b'], start: 0, end: 50, fence: 8 }),
      hold({ granularity: 'tree', keys: ['/a/c/d.txt'], start: 1, end: 40, fence: 4 }),
      hold({ granularity: 'tree', keys: ['/a/b/x.txt'], mode: 'shared', start: 60, end: 70, fence: 10 }),
    ]);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
    expect(Object.keys(report.namespaces).sort()).toEqual(['lt-document', 'lt-global', 'lt-tree']);
  });

  it('a shared hold may carry a smaller fence than an earlier shared hold', () => {
    const report = checkHolds([
      hold({ granularity: 'document', keys: ['/f'], mode: 'shared', start: 0, end: 10, fence: 9 }),
      hold({ granularity: 'document', keys: ['/f'], mode: 'shared', start: 20, end: 30, fence: 3 }),
      hold({ granularity: 'document', keys: ['/f'], start: 40, end: 50, fence: 10 }),
    ]);
    expect(report.ok).toBe(true);
  });
});

describe('checkHolds: unsafe histories fail', () => {
  it('overlapping exclusive global holds', () => {
    const report = checkHolds([hold({ granularity: 'global', start: 0, end: 20, fence: 1 }), hold({ granularity: 'global', start: 10, end: 30, fence: 2 })]);
    expect(report.ok).toBe(false);
    expect(report.violations[0]!.kind).toBe('overlap');
    expect(report.violations[0]!.message).toContain('overlapped for 10 ms');
  });

  it('a writer overlapping a reader under the global lock', () => {
    const report = checkHolds([
      hold({ granularity: 'global', mode: 'shared', start: 0, end: 20, fence: 1 }),
      hold({ granularity: 'global', start: 19, end: 30, fence: 2 }),
    ]);
    expect(report.violationCount).toBe(1);
  });

  it('document holds sharing one id of many', () => {
    const report = checkHolds([
      hold({ granularity: 'document', keys: ['/d/1', '/d/2', '/d/3'], start: 0, end: 20, fence: 1 }),
      hold({ granularity: 'document', keys: ['/d/3'], mode: 'shared', start: 5, end: 8, fence: 2 }),
    ]);
    expect(report.ok).toBe(false);
  });

  it('a file edit inside a directory being renamed (tree)', () => {
    const report = checkHolds([
      hold({ granularity: 'tree', op: 'rename', keys: ['/a/b'], start: 0, end: 20, fence: 1 }),
      hold({ granularity: 'tree', keys: ['/a/b/c/d.txt'], start: 15, end: 25, fence: 2 }),
    ]);
    expect(report.ok).toBe(false);
    expect(report.violations[0]!.kind).toBe('overlap');
  });

  it('fencing tokens going backwards without any overlap', () => {
    const report = checkHolds([hold({ granularity: 'global', start: 0, end: 10, fence: 50 }), hold({ granularity: 'global', start: 20, end: 30, fence: 40 })]);
    expect(report.ok).toBe(false);
    expect(report.violations.map((v) => v.kind)).toEqual(['fencing']);
  });

  it('an equal fencing token on a conflicting later hold', () => {
    const report = checkHolds([
      hold({ granularity: 'document', keys: ['/x'], start: 0, end: 10, fence: 7 }),
      hold({ granularity: 'document', keys: ['/x', '/y'], start: 11, end: 20, fence: 7 }),
    ]);
    expect(report.violations.map((v) => v.kind)).toEqual(['fencing']);
  });

  it('tree fencing: a later rename of an ancestor with a smaller token than an earlier edit below it', () => {
    const report = checkHolds([
      hold({ granularity: 'tree', keys: ['/a/b/c.txt'], start: 0, end: 10, fence: 30 }),
      hold({ granularity: 'tree', op: 'rename', keys: ['/a'], start: 20, end: 30, fence: 25 }),
    ]);
    expect(report.violations.map((v) => v.kind)).toEqual(['fencing']);
    expect(report.violations[0]!.first.fence).toBe(30);
  });

  it('tree fencing: a later edit below an earlier rename with a smaller token', () => {
    const report = checkHolds([
      hold({ granularity: 'tree', op: 'rename', keys: ['/a'], start: 0, end: 10, fence: 30 }),
      hold({ granularity: 'tree', keys: ['/a/b/c.txt'], mode: 'shared', start: 20, end: 30, fence: 29 }),
    ]);
    expect(report.violations.map((v) => v.kind)).toEqual(['fencing']);
  });

  it('finds the violation among many clean holds', () => {
    const holds: HoldRecord[] = [];
    for (let i = 0; i < 1000; i++) holds.push(hold({ granularity: 'global', start: i * 10, end: i * 10 + 9, fence: 1000 + i }));
    holds.push(hold({ granularity: 'global', start: 5000, end: 5003, fence: 9999 }));
    const report = checkHolds(holds);
    expect(report.violationCount).toBeGreaterThanOrEqual(1);
    expect(report.violations.some((v) => v.kind === 'overlap')).toBe(true);
  });
});

describe('expired leases', () => {
  it('an overlap that starts after the earlier lease expired is a warning, not a violation', () => {
    const report = checkHolds([
      hold({ granularity: 'global', start: 0, end: 3000, expiresAt: 1000, fence: 1 }),
      hold({ granularity: 'global', start: 1600, end: 1700, fence: 2 }),
    ]);
    expect(report.ok).toBe(true);
    expect(report.warningCount).toBe(1);
    expect(report.warnings[0]!.kind).toBe('expired-overlap');
  });
});

describe('parseHoldLog', () => {
  const record = hold({ granularity: 'tree', keys: ['/a "quoted"/b'], start: 1, end: 2 });
  const raw = `LTHOLD ${JSON.stringify(record)}`;

  it('reads k6 text-format, JSON-format and raw lines, and error samples', () => {
    const text = [
      `time="2025-01-01T00:00:00Z" level=info msg=${JSON.stringify(raw)} source=console`,
      JSON.stringify({ level: 'info', msg: raw, time: 'x' }),
      raw,
      'time="x" level=warning msg="Insufficient VUs"',
      `time="x" level=error msg=${JSON.stringify('LTERROR tree acquire 500: boom')} source=console`,
      'LTHOLD {"broken": ',
    ].join('\n');
    const parsed = parseHoldLog(text);
    expect(parsed.holds).toHaveLength(3);
    expect(parsed.holds[0]).toEqual(record);
    expect(parsed.errors).toEqual(['tree acquire 500: boom']);
    expect(parsed.malformed).toBe(1);
  });

  it('formats a readable verdict', () => {
    const bad = checkHolds([hold({ granularity: 'global', start: 0, end: 20 }), hold({ granularity: 'global', start: 10, end: 30 })]);
    expect(formatSafety('global', bad)).toMatch(/VIOLATION - 1 violation/);
    expect(formatSafety('global', checkHolds([]))).toMatch(/OK - 0 critical sections/);
  });
});

describe('semantic conflicts (phantoms)', () => {
  const rename = (granularity: 'document' | 'tree', start: number, end: number) =>
    hold({ granularity, op: 'rename', target: '/a', keys: granularity === 'tree' ? ['/a'] : ['/a/f.txt', '/a/g.txt'], start, end });

  it('a file created under a directory while it is being renamed is counted, though document locks let it in', () => {
    const report = checkHolds([
      rename('document', 0, 100),
      hold({ granularity: 'document', op: 'create', target: '/a/new-1.txt', keys: ['/a/new-1.txt'], start: 50, end: 60 }),
    ]);
    expect(report.ok).toBe(true);
    expect(report.phantomCount).toBe(1);
    expect(report.phantoms[0]!.message).toMatch(/^create of \/a\/new-1\.txt ran while \/a was being renamed \(10 ms together\)/);
    expect(formatSafety('document/default', report)).toMatch(/semantic conflicts document\/default: 1 operation/);
  });

  it('work beside the directory, or before or after the rename, is not', () => {
    const report = checkHolds([
      rename('document', 0, 100),
      hold({ granularity: 'document', op: 'create', target: '/ab/new.txt', keys: ['/ab/new.txt'], start: 10, end: 20 }),
      hold({ granularity: 'document', op: 'create', target: '/b/new.txt', keys: ['/b/new.txt'], start: 10, end: 20 }),
      hold({ granularity: 'document', op: 'create', target: '/a/late.txt', keys: ['/a/late.txt'], start: 100, end: 120 }),
      hold({ granularity: 'document', op: 'edit', target: '/a/f.txt', keys: ['/a/f.txt'], start: -30, end: 0 }),
    ]);
    expect(report.phantomCount).toBe(0);
  });

  it('under tree locks the same interleaving is also a lock violation (the tree lock should have excluded it)', () => {
    const report = checkHolds([
      rename('tree', 0, 100),
      hold({ granularity: 'tree', op: 'create', target: '/a/new.txt', keys: ['/a/new.txt'], start: 50, end: 60 }),
    ]);
    expect(report.ok).toBe(false);
    expect(report.phantomCount).toBe(1);
  });
});
