import { describe, expect, it } from 'vitest';
import { retryDelayMs } from '../../loadtests/shared/backoff.js';
import { defaultWorkload } from '../../loadtests/shared/defaults.js';
import {
  buildTree,
  GRANULARITY_NAMES,
  lockPlan,
  MAX_IDS_PER_REQUEST,
  namespaceFor,
  type Operation,
  operationSource,
  rampLevelAt,
  rampStages,
  skewedPicker,
  treeStats,
  validateWorkload,
} from '../../loadtests/shared/workload.js';
import { seededRandom } from '../../tools/shared/seeded-random.js';

describe('tree', () => {
  it('is generated deterministically from its shape', () => {
    const shape = defaultWorkload().tree;
    expect(buildTree(shape)).toEqual(buildTree({ ...shape }));
    expect(buildTree({ ...shape, seed: shape.seed + 1 }).files).not.toEqual(buildTree(shape).files);
  });

  it('has the counted directories and files, unique absolute paths, and every file under its directories', () => {
    const shape = { depth: 3, fanout: 3, filesPerDir: 4, seed: 7 };
    const tree = buildTree(shape);
    const stats = treeStats(shape);
    expect(tree.dirs).toHaveLength(stats.dirs);
    expect(tree.files).toHaveLength(stats.files);
    expect(stats).toEqual({ dirs: 39, files: 156, largestDirFiles: 52 });
    expect(new Set(tree.files).size).toBe(tree.files.length);
    expect(new Set(tree.dirs.map((d) => d.path)).size).toBe(tree.dirs.length);
    for (const file of tree.files) expect(file).toMatch(/^(\/[A-Za-z0-9._-]+){2,}$/);
    for (const dir of tree.dirs) {
      expect(dir.files.length).toBe(Math.max(...tree.dirs.filter((d) => d.depth === dir.depth).map((d) => d.files.length)));
      for (const file of dir.files) expect(file.startsWith(`${dir.path}/`)).toBe(true);
    }
    expect(Math.max(...tree.dirs.map((d) => d.files.length))).toBe(stats.largestDirFiles);
  });

  it('the default keeps every rename below the id limit', () => {
    expect(validateWorkload(defaultWorkload())).toEqual([]);
    expect(treeStats(defaultWorkload().tree).largestDirFiles).toBeLessThan(MAX_IDS_PER_REQUEST);
  });

  it('rejects trees whose largest rename would exceed the id limit, and bad mixes', () => {
    const big = { ...defaultWorkload(), tree: { depth: 4, fanout: 5, filesPerDir: 10, seed: 1 } };
    expect(validateWorkload(big).join(' ')).toMatch(/fewer than 500 ids/);
    expect(validateWorkload({ ...defaultWorkload(), mix: { read: 0, edit: 0, rename: 0 } }).join(' ')).toMatch(/at least one operation/);
    expect(validateWorkload({ ...defaultWorkload(), skew: { kind: 'hotspot', hotFraction: 1.5, hotTraffic: 0.9 } })).toHaveLength(1);
  });
});

describe('skew', () => {
  const draw = (picker: (r: () => number) => number, n: number, draws: number): number[] => {
    const counts = new Array<number>(n).fill(0);
    const random = seededRandom(99);
    for (let i = 0; i < draws; i++) counts[picker(random)]!++;
    return counts.sort((a, b) => b - a);
  };

  it('uniform spreads evenly', () => {
    const counts = draw(skewedPicker(100, { kind: 'uniform' }, 1), 100, 100_000);
    expect(counts[0]! / counts[99]!).toBeLessThan(1.5);
  });

  it('hotspot: 10% of targets get about 90% of picks', () => {
    const counts = draw(skewedPicker(100, { kind: 'hotspot', hotFraction: 0.1, hotTraffic: 0.9 }, 1), 100, 100_000);
    const hot = counts.slice(0, 10).reduce((a, b) => a + b, 0);
    expect(hot / 100_000).toBeGreaterThan(0.88);
    expect(hot / 100_000).toBeLessThan(0.92);
  });

  it('zipf: the most popular target dominates the least popular', () => {
    const counts = draw(skewedPicker(100, { kind: 'zipf', s: 1.2 }, 1), 100, 100_000);
    expect(counts[0]! / Math.max(1, counts[99]!)).toBeGreaterThan(50);
  });

  it('scatters the hot targets with the seed instead of taking the first ones', () => {
    const picker = skewedPicker(1000, { kind: 'hotspot', hotFraction: 0.01, hotTraffic: 1 }, 5);
    const random = seededRandom(3);
    const picks = new Set(Array.from({ length: 2000 }, () => picker(random)));
    expect(picks.size).toBe(10);
    expect([...picks].some((index) => index >= 10)).toBe(true);
  });
});

describe('operations and lock plans', () => {
  it('follows the mix', () => {
    const source = operationSource({ ...defaultWorkload(), mix: { read: 40, edit: 30, rename: 10, create: 15, delete: 5 } });
    const random = seededRandom(11);
    const counts = { read: 0, edit: 0, rename: 0, create: 0, delete: 0 };
    for (let i = 0; i < 20_000; i++) counts[source.next(random).kind]++;
    expect(counts.read / 20_000).toBeCloseTo(0.4, 1);
    expect(counts.edit / 20_000).toBeCloseTo(0.3, 1);
    expect(counts.rename / 20_000).toBeCloseTo(0.1, 1);
    expect(counts.create / 20_000).toBeCloseTo(0.15, 1);
    expect(counts.delete / 20_000).toBeCloseTo(0.05, 1);
  });

  it('creates new files inside existing directories, under names no file of the tree has', () => {
    const source = operationSource({ ...defaultWorkload(), mix: { read: 0, edit: 0, rename: 0, create: 1 } });
    const random = seededRandom(5);
    const existing = new Set(source.tree.files);
    const dirs = new Set(source.tree.dirs.map((d) => d.path));
    const created = Array.from({ length: 200 }, () => source.next(random));
    for (const op of created) {
      expect(op.kind).toBe('create');
      expect(existing.has(op.target)).toBe(false);
      expect(dirs.has(op.target.slice(0, op.target.lastIndexOf('/')))).toBe(true);
      expect(lockPlan('document', op)).toMatchObject({ mode: 'exclusive', ids: [op.target] });
    }
    expect(new Set(created.map((op) => op.target)).size).toBe(200);
  });

  const tree = buildTree(defaultWorkload().tree);
  const dir = tree.dirs[0]!;
  const rename: Operation = { kind: 'rename', target: dir.path, files: dir.files };
  const read: Operation = { kind: 'read', target: tree.files[0]!, files: [tree.files[0]!] };

  it('global: one lock, shared for reads', () => {
    expect(lockPlan('global', read)).toEqual({ granularity: 'global', mode: 'shared', keys: ['*'] });
    expect(lockPlan('global', rename).mode).toBe('exclusive');
  });

  it('document: a rename locks every file under the directory in one request', () => {
    const plan = lockPlan('document', rename);
    expect(plan.granularity).toBe('document');
    expect(plan.ids).toEqual(dir.files);
    expect(plan.ids!.length).toBe(52);
    expect(lockPlan('document', read)).toMatchObject({ ids: [read.target], mode: 'shared' });
  });

  it('tree: the directory path for a rename, the file path otherwise', () => {
    expect(lockPlan('tree', rename)).toEqual({ granularity: 'tree', mode: 'exclusive', path: dir.path, keys: [dir.path] });
    expect(lockPlan('tree', read)).toMatchObject({ path: read.target, mode: 'shared' });
  });

  it('namespaces fit the service pattern', () => {
    for (const granularity of GRANULARITY_NAMES) {
      expect(namespaceFor(granularity, '20250101t000000', 'default')).toMatch(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/);
    }
    expect(namespaceFor('document', 'x'.repeat(80), 'w').length).toBe(64);
  });
});

describe('retry delays', () => {
  const policy = { budgetMs: 3000, baseDelayMs: 10, maxDelayMs: 200, honourRetryAfter: true };

  it('grow exponentially with jitter up to the cap', () => {
    expect(retryDelayMs({ ...policy, honourRetryAfter: false }, 0, undefined, () => 0)).toBe(5);
    expect(retryDelayMs({ ...policy, honourRetryAfter: false }, 0, undefined, () => 0.999)).toBe(10);
    expect(retryDelayMs({ ...policy, honourRetryAfter: false }, 3, undefined, () => 0)).toBe(40);
    expect(retryDelayMs({ ...policy, honourRetryAfter: false }, 20, undefined, () => 0.999)).toBe(200);
  });

  it('wait at least the capped retryAfterMs hint', () => {
    expect(retryDelayMs(policy, 0, 80, () => 0)).toBe(40);
    expect(retryDelayMs(policy, 0, 80, () => 0.999)).toBe(80);
    expect(retryDelayMs(policy, 0, 5000, () => 0.999)).toBe(200);
  });
});

describe('ramp', () => {
  it('jumps to each level and holds it', () => {
    const ramp = { levels: [20, 40], stepS: 5, transitionS: 0, startAfterS: 0 };
    expect(rampStages(ramp)).toEqual([
      { duration: '0s', target: 20 },
      { duration: '5s', target: 20 },
      { duration: '0s', target: 40 },
      { duration: '5s', target: 40 },
    ]);
    expect(rampLevelAt(ramp, 0)).toBe(20);
    expect(rampLevelAt(ramp, 4999)).toBe(20);
    expect(rampLevelAt(ramp, 5000)).toBe(40);
    expect(rampLevelAt(ramp, 60_000)).toBe(40);
  });

  it('attributes transitions to no level', () => {
    const ramp = { levels: [20, 40], stepS: 5, transitionS: 2, startAfterS: 0 };
    expect(rampLevelAt(ramp, 1000)).toBeUndefined();
    expect(rampLevelAt(ramp, 2500)).toBe(20);
    expect(rampLevelAt(ramp, 6000)).toBeUndefined();
    expect(rampLevelAt(ramp, 7000)).toBe(40);
  });
});
