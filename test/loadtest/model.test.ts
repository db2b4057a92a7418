/** The deployment model's arithmetic (loadtests/runner/model.ts); its check against a real 3-node cluster is `npm run loadtest:model`. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCli } from '../../loadtests/runner/cli.js';
import { defaultConfig } from '../../loadtests/runner/config.js';
import { ConfigError } from '../../loadtests/runner/config-error.js';
import { loadedPrediction } from '../../loadtests/runner/loaded-prediction.js';
import {
  assumptions,
  type Calibration,
  type Deployment,
  deploymentFromHop,
  expectedBusiest,
  MOST_NAMESPACES,
  noRequests,
  type P99Point,
  type PerKind,
  p99Tail,
  p99Trend,
  predict,
  primaryShares,
  rateWithinP99,
  relativeError,
  requestMixOf,
  shardParallelism,
} from '../../loadtests/runner/model.js';
import { checkRows, checkTable, checkVerdict, halvesApart, medianCalibration, sidesInTrial } from '../../loadtests/runner/model-check.js';
import { modelLines } from '../../loadtests/runner/render/model.js';
import type { RunInfo } from '../../loadtests/runner/render/report-input.js';
import type { GranularityResult } from '../../loadtests/runner/summary.js';
import { NAMESPACES_PER_RUN } from '../../loadtests/shared/workload.js';
import { seededRandom } from '../../tools/shared/seeded-random.js';

const document: Calibration = {
  granularity: 'document',
  capacity: 200,
  requestsPerOp: 4,
  writeShare: 0.5,
  esMsPerOp: 10,
  backoffMsPerOp: 2,
  criticalSectionMs: 20,
};
const dedicated = deploymentFromHop({ functions: 50, nodes: 3, replicas: 1, hopMs: 1 });
const slower = (addedMs: Partial<PerKind>): Deployment => ({ ...dedicated, addedMs: { ...noRequests(), ...addedMs }, addedMsSource: 'test' });

describe('the deployment model', () => {
  it('few functions: each runs one operation at a time, so N / operation time bounds the rate', () => {
    const prediction = predict(document, { ...dedicated, functions: 2 });
    // 10 ms in Elasticsearch + 2 writes x 1 ms replica hop + 2 ms backoff + 20 ms critical section = 34 ms.
    expect(prediction.operationMs).toBe(34);
    expect(prediction.bound).toBe('functions');
    expect(prediction.capacity).toBeCloseTo(2000 / 34, 5);
  });

  it('many functions: longer requests hold the locks longer, so contention leaves proportionally less', () => {
    // Held for 20 ms critical section + 10 ms of requests here; 2 writes x 1 ms more there.
    expect(predict(document, dedicated)).toMatchObject({ bound: 'contention' });
    expect(predict(document, dedicated).capacity).toBeCloseTo((200 * 30) / 32, 5);
    expect(predict(document, { ...dedicated, nodes: 9 }).capacity).toBe(predict(document, dedicated).capacity);
    expect(predict(document, slower({})).capacity).toBe(200);
  });

  it('weighs each kind of request by how often one operation sends it', () => {
    const tree = { ...document, granularity: 'tree', requestMix: { write: 2, read: 1, refresh: 0.5, search: 1 } };
    // 2 x 1 + 1 x 0 + 0.5 x 8 + 1 x 2 = 8 ms more per operation.
    const prediction = predict(tree, slower({ write: 1, refresh: 8, search: 2 }));
    expect(prediction.operationMs).toBe(10 + 8 + 2 + 20);
    expect(prediction.capacity).toBeCloseTo((200 * 30) / 38, 5);
  });

  it('contention weighs a lock by the files it covers: a slow directory lock over many files counts for each of them', () => {
    const tree = { ...document, granularity: 'tree', perCoveredFile: { esMsPerOp: 30, requestMix: { write: 2, read: 0, refresh: 1, search: 1 } } };
    // Held 20 + 30 = 50 ms per covered file here; 2 x 1 + 1 x 8 + 1 x 2 = 12 ms more there.
    expect(predict(tree, slower({ write: 1, refresh: 8, search: 2 })).capacity).toBeCloseTo((200 * 50) / 62, 5);
    // The functions bound still counts operations, not files: 10 ms + 2 x 1 ms more per operation.
    expect(predict(tree, slower({ write: 1, refresh: 8, search: 2 })).operationMs).toBe(10 + 2 + 2 + 20);
  });

  it('results without the request mix read it from requests per operation and the share of writes', () => {
    expect(requestMixOf(document)).toEqual({ write: 2, read: 2, refresh: 0, search: 0 });
  });

  it('never predicts more than the calibrated capacity: the one primary shard does the same work', () => {
    expect(predict(document, slower({ write: -3, read: -3 })).capacity).toBe(200);
  });

  it('global is serialised: every replicated write lengthens each handoff', () => {
    const global = { ...document, granularity: 'global', capacity: 40 };
    const prediction = predict(global, deploymentFromHop({ functions: 50, nodes: 3, replicas: 1, hopMs: 5 }));
    expect(prediction.bound).toBe('serialisation');
    // Held 20 + 10 = 30 ms here, 40 ms with 2 writes x 5 ms more: each handoff waits that much longer.
    expect(prediction.capacity).toBeCloseTo((40 * 30) / 40, 5);
  });

  it('without replicas a write waits for no other node', () => {
    expect(deploymentFromHop({ functions: 50, nodes: 1, replicas: 0, hopMs: 5 }).addedMs).toEqual(noRequests());
  });

  it('the p99 trend: probes at one rate averaged, then made non-decreasing', () => {
    expect(
      p99Trend([
        { rate: 80, p99Ms: 120 },
        { rate: 40, p99Ms: 60 },
        { rate: 40, p99Ms: 100 },
        { rate: 120, p99Ms: 400 },
        { rate: 100, p99Ms: 100 },
      ]),
    ).toEqual([
      { rate: 40, p99Ms: 80 },
      { rate: 80, p99Ms: 110 },
      { rate: 100, p99Ms: 110 },
      { rate: 120, p99Ms: 400 },
    ]);
  });

  it('the rate within a p99 budget: interpolated between probes, none past it when no probe went past it', () => {
    const trend = [
      { rate: 40, p99Ms: 50 },
      { rate: 80, p99Ms: 150 },
      { rate: 120, p99Ms: 350 },
    ];
    expect(rateWithinP99(trend, 250)).toBe(100);
    expect(rateWithinP99(trend, 100)).toBe(60);
    // Below the lowest probe, proportional to the rate.
    expect(rateWithinP99(trend, 25)).toBe(20);
    expect(rateWithinP99(trend, -5)).toBe(0);
    expect(rateWithinP99(trend, 400)).toBe(Number.POSITIVE_INFINITY);
    expect(rateWithinP99([], 250)).toBe(Number.POSITIVE_INFINITY);
  });

  it('the p99 tail: the operations the p99 is made of take longer there, leaving less of the objective to wait in', () => {
    const curve = [
      { rate: 40, p99Ms: 50 },
      { rate: 80, p99Ms: 150 },
      { rate: 120, p99Ms: 350 },
    ];
    // The p99 is the renames': one refresh and one search each.
    const tree: Calibration = {
      ...document,
      granularity: 'tree',
      capacity: 100,
      p99: { objectiveMs: 250, curve, requestsByOp: { read: { ...noRequests(), read: 1 }, rename: { ...noRequests(), refresh: 1, search: 1 } } },
    };
    // Nothing slower there: the contention bound, exactly.
    expect(predict(tree, slower({})).capacity).toBe(100);
    // Refresh 90 ms and search 10 ms slower: the renames have 150 of the 250 ms, reached at 80 ops/s of the 100 here.
    const prediction = predict(tree, slower({ refresh: 90, search: 10 }));
    expect(prediction).toMatchObject({ bound: 'p99 tail', tail: { op: 'rename', addedMs: 100 } });
    expect(prediction.capacity).toBeCloseTo(80, 10);
    // Longer holds as well: the locks there are as busy as at (hold there / hold here) x the rate here. Writes 5 ms slower: 30 ms held, 40 there.
    expect(predict(tree, slower({ write: 5, refresh: 90, search: 10 })).capacity).toBeCloseTo((80 * 30) / 40, 10);
    // The tail never raises a prediction: requests faster there leave the contention bound.
    expect(predict(tree, slower({ refresh: -20 })).bound).toBe('contention');
  });

  it('the p99 tail when goodput, not the p99, ended the capacity: the trend still says where the shorter budget is crossed', () => {
    const tree: Calibration = {
      ...document,
      granularity: 'tree',
      capacity: 100,
      p99: {
        objectiveMs: 250,
        curve: [
          { rate: 50, p99Ms: 50 },
          { rate: 100, p99Ms: 150 },
        ],
        requestsByOp: { rename: { ...noRequests(), refresh: 1 } },
      },
    };
    expect(predict(tree, slower({ refresh: 50 })).capacity).toBe(100);
    expect(predict(tree, slower({ refresh: 150 }))).toMatchObject({ bound: 'p99 tail', capacity: 75 });
  });

  it('the p99 holds one operation of the kind whose requests gain the most there: a rename, or a read held out by one', () => {
    const p99 = {
      objectiveMs: 250,
      curve: [],
      requestsByOp: { read: { ...noRequests(), write: 3, read: 1 }, rename: { ...noRequests(), write: 4, refresh: 1, search: 1 } },
    };
    expect(p99Tail(p99, slower({ write: 5, refresh: 40, search: 10 }))).toEqual({ op: 'rename', addedMs: 70 });
    expect(p99Tail(p99, slower({ write: 5 }))).toEqual({ op: 'rename', addedMs: 20 });
    expect(p99Tail({ ...p99, requestsByOp: {} }, slower({ write: 5 }))).toEqual({ op: '-', addedMs: 0 });
  });

  it('measures its error relative to what was measured', () => {
    expect(relativeError(90, 100)).toBeCloseTo(0.1, 10);
    expect(relativeError(120, 100)).toBeCloseTo(0.2, 10);
  });
});

/** The busiest bin's mean and its standard error over `rounds` throws of `balls` balls into bins with `shares`. */
function sampledBusiest(balls: number, shares: number[], rounds: number, random: () => number): { mean: number; error: number } {
  let sum = 0;
  let squares = 0;
  for (let round = 0; round < rounds; round++) {
    const counts = shares.map(() => 0);
    for (let ball = 0; ball < balls; ball++) {
      let u = random();
      let bin = 0;
      while (bin < shares.length - 1 && u >= shares[bin]!) u -= shares[bin++]!;
      counts[bin]!++;
    }
    const busiest = Math.max(...counts);
    sum += busiest;
    squares += busiest * busiest;
  }
  const mean = sum / rounds;
  return { mean, error: Math.sqrt((squares / rounds - mean * mean) / rounds) };
}

const even = (bins: number): number[] => Array.from({ length: bins }, () => 1 / bins);

describe('the deployment model with several shards', () => {
  // Many functions, requests as fast as here: the contention bound is the ceiling itself.
  const open = { ...slower({}), functions: 100_000 };

  it('one shard, as before: the prediction is the same whatever the namespaces and nodes', () => {
    expect(dedicated).toMatchObject({ shards: 1, namespaces: 1 });
    for (const namespaces of [1, 2, 64, 5000]) {
      for (const nodes of [1, 3, 9]) expect(predict(document, { ...dedicated, nodes, namespaces, shards: 1 })).toEqual(predict(document, dedicated));
    }
    expect(predict(document, dedicated).capacity).toBe((200 * 30) / 32);
    expect(assumptions(dedicated)[1]).toBe(
      "3 Elasticsearch node(s); the lock index has 1 primary shard(s) and 1 replica(s); the workload runs in 1 namespace(s), each on one shard (routing by namespace): one namespace lives on one shard, so more nodes add no lock throughput (the contention bound is one primary's)",
    );
    expect(assumptions({ ...dedicated, namespaces: 64 })[1]).toContain('one primary shard takes every namespace, so more nodes add no lock throughput');
  });

  it('one namespace gains nothing from any number of shards: it lives on one of them', () => {
    for (const shards of [2, 3, 16, 1024]) {
      const deployment = { ...dedicated, nodes: 9, shards };
      expect(predict(document, deployment)).toEqual(predict(document, dedicated));
      expect(predict(document, { ...open, nodes: 9, shards }).capacity).toBe(200);
      expect(shardParallelism(deployment)).toEqual({ parallelism: 1, busiest: 1, limit: 'one namespace' });
      expect(assumptions(deployment)[1]).toContain('one namespace lives on one shard, so more shards add no lock throughput');
    }
  });

  it("the kit's own workload runs in one namespace, so its report predicts the same with --shards", () => {
    expect(NAMESPACES_PER_RUN).toBe(1);
    const calibration = { ...document, capacity: 160 };
    const info = (shards: number): RunInfo => {
      const config = defaultConfig();
      config.deployment.shards = shards;
      config.resultsDir = join('results', 'no-such-dir-for-the-model-test');
      return { runId: 'r', startedAt: 'a', finishedAt: 'b', baseUrl: 'http://x', mode: 'local', k6: 'k6', config, notes: [] };
    };
    const results = [{ granularity: 'document', engine: { calibration } }] as unknown as GranularityResult[];
    const one = modelLines(info(1), results);
    const three = modelLines(info(3), results);
    expect(three[0]).toContain('a 3-node cluster, a lock index of 3 primary shard(s) (--functions, --nodes, --shards, --replicas, --hop-ms)');
    expect(three.find((line) => line.startsWith('| document'))).toBe(one.find((line) => line.startsWith('| document')));
    expect(three).toContain(
      "- 3 Elasticsearch node(s); the lock index has 3 primary shard(s) and 1 replica(s); the workload runs in 1 namespace(s), each on one shard (routing by namespace): one namespace lives on one shard, so more shards add no lock throughput (the contention bound is one primary's)",
    );
  });

  it('many namespaces: the ceiling grows by k / the expected namespaces on the busiest node, at most the shards and the nodes', () => {
    const deployment = { ...open, nodes: 3, shards: 3, namespaces: 64 };
    const busiest = expectedBusiest(64, even(3));
    const prediction = predict(document, deployment);
    expect(prediction.bound).toBe('contention');
    expect(prediction.capacity).toBeCloseTo((200 * 64) / busiest, 9);
    // 64 namespaces over 3 shards: about 25.3 on the busiest, so about 2.5x, short of 3x.
    expect(busiest).toBeGreaterThan(64 / 3);
    expect(prediction.capacity).toBeGreaterThan(2.4 * 200);
    expect(prediction.capacity).toBeLessThan(3 * 200);
    expect(assumptions(deployment)[1]).toMatch(
      /the contention bound is 2\.53x one primary's, k \/ the expected namespaces on the busiest node \(64 \/ 25\.29;/,
    );
    expect(assumptions(deployment)[1]).toContain('3 shards on the local 3-node cluster measured 0.59-0.79 of the 1-shard rate');

    // More namespaces spread more evenly; never past the shards.
    const parallelism = (shards: number, namespaces: number, nodes = 1024) => shardParallelism({ shards, namespaces, nodes }).parallelism;
    expect(parallelism(3, 2)).toBeCloseTo(2 / (1 + 1 / 3), 12);
    expect(parallelism(3, 640)).toBeGreaterThan(parallelism(3, 64));
    expect(parallelism(3, 640)).toBeLessThan(3);
    // Never past the namespaces: 2 namespaces on 64 shards collide 1 time in 64.
    expect(parallelism(64, 2)).toBeCloseTo(2 / (1 + 1 / 64), 12);
    // Never past the nodes: 8 primaries on 2 nodes are 2 nodes' worth, 4 each.
    expect(parallelism(8, 100, 2)).toBeCloseTo(100 / expectedBusiest(100, [0.5, 0.5]), 12);
    expect(parallelism(8, 100, 2)).toBeLessThan(2);
    expect(parallelism(4, 100, 1)).toBe(1);
    // 4 primaries on 3 nodes: one node holds two of them, half the namespaces.
    expect(primaryShares(4, 3)).toEqual([0.5, 0.25, 0.25]);
    expect(primaryShares(2, 3)).toEqual([0.5, 0.5]);
    expect(parallelism(4, 100, 3)).toBeLessThan(2);
    expect(parallelism(4, 100, 3)).toBeLessThan(parallelism(3, 100, 3));
  });

  it('longer requests and the functions bound work on the shards as on one', () => {
    // Contention: held 30 ms here, 32 there; the ceiling k / E[max] times as high.
    const deployment = { ...dedicated, functions: 100_000, shards: 3, namespaces: 64 };
    expect(predict(document, deployment).capacity).toBeCloseTo(((200 * 64) / expectedBusiest(64, even(3))) * (30 / 32), 9);
    // The functions bound is the same: N / operation time.
    expect(predict(document, { ...deployment, functions: 2 })).toEqual({ granularity: 'document', capacity: 2000 / 34, bound: 'functions', operationMs: 34 });
    // Global serialises per namespace: one global lock each, spread over the shards like the rest.
    expect(predict({ ...document, granularity: 'global', capacity: 40 }, deployment)).toMatchObject({ bound: 'serialisation' });
  });

  it('the expected busiest bin: known values', () => {
    expect(expectedBusiest(1, [1])).toBe(1);
    expect(expectedBusiest(2, even(2))).toBeCloseTo(1.5, 12);
    expect(expectedBusiest(3, even(2))).toBeCloseTo(2.25, 12);
    // 3 balls in 3 bins: all apart 6/27, all together 3/27, else 2.
    expect(expectedBusiest(3, even(3))).toBeCloseTo((6 * 1 + 18 * 2 + 3 * 3) / 27, 12);
    // Uneven bins (4 primaries on 3 nodes): all in one .125 + 2/64, all apart 3! x .5 x .25 x .25.
    expect(expectedBusiest(3, [0.5, 0.25, 0.25])).toBeCloseTo(3 * 0.15625 + 2 * 0.65625 + 0.1875, 12);
    expect(expectedBusiest(0, even(3))).toBe(0);
    expect(expectedBusiest(7, [1])).toBe(7);
    expect(expectedBusiest(1, even(5))).toBe(1);
    // With more bins than balls every ball tends to its own bin; never below the pigeonhole bound.
    expect(expectedBusiest(2, even(1000))).toBeCloseTo(1.001, 12);
    expect(expectedBusiest(100, even(4))).toBeGreaterThan(25);
    expect(() => expectedBusiest(2.5, even(2))).toThrow(RangeError);
    expect(() => expectedBusiest(2, [0.5, 0.4])).toThrow(/sum to 1/);
  });

  it('the expected busiest bin agrees with a Monte Carlo throw of the balls', () => {
    const random = seededRandom(20_261_122);
    for (const [balls, shares] of [
      [10, even(3)],
      [64, even(3)],
      [40, even(8)],
      [20, [0.5, 0.25, 0.25]],
    ] as Array<[number, number[]]>) {
      const sampled = sampledBusiest(balls, shares, 20_000, random);
      // Within 4 standard errors (plus a hair for the exact side's rounding).
      expect(Math.abs(expectedBusiest(balls, shares) - sampled.mean), `${balls} balls in ${shares.length} bins`).toBeLessThan(4 * sampled.error + 1e-9);
    }
  });

  it('is quick for many namespaces, and beyond 1,024 takes the figure for 1,024 (a little low)', () => {
    const started = performance.now();
    const many = shardParallelism({ shards: 16, namespaces: 1_000_000, nodes: 16 });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(many.parallelism).toBeCloseTo(shardParallelism({ shards: 16, namespaces: MOST_NAMESPACES, nodes: 16 }).parallelism, 12);
    expect(many.parallelism).toBeGreaterThan(12);
    expect(many.parallelism).toBeLessThan(16);
  });

  it('--shards sets the deployment the report predicts for: a whole number >= 1', () => {
    expect(defaultConfig().deployment.shards).toBe(1);
    expect(parseCli([]).config.deployment.shards).toBe(1);
    expect(parseCli(['--shards', '3', '--nodes', '5']).config.deployment).toMatchObject({ shards: 3, nodes: 5 });
    for (const wrong of ['0', '-2', '1.5', 'x', '']) {
      expect(() => parseCli(['--shards', wrong])).toThrow(ConfigError);
      expect(() => parseCli(['--shards', wrong])).toThrow(new RegExp(`^--shards: must be a whole number >= 1 \\(got "${wrong.replace('.', '\\.')}"\\)$`));
    }
  });
});

describe("the model's check on a cluster it did not see", () => {
  // The check's cluster: writes 7.5 ms slower, so 2 writes make the 30 ms hold 45 ms (x 2/3).
  const cluster = slower({ write: 7.5 });
  const trial = (single: number, cluster: number, esMsPerOp = 10) => ({
    granularity: 'document',
    single: { ...document, capacity: single, esMsPerOp },
    cluster: { ...document, capacity: cluster },
  });

  it('predicts from the median of every calibrated figure, so one noisy search does not move it', () => {
    const median = medianCalibration([trial(200, 0, 10).single, trial(400, 0, 90).single, trial(210, 0, 12).single]);
    expect(median).toMatchObject({ capacity: 210, esMsPerOp: 12, requestsPerOp: 4, criticalSectionMs: 20 });
  });

  it('compares the prediction with the median measurement and keeps both ranges', () => {
    const [row] = checkRows([trial(200, 120), trial(400, 150), trial(210, 140)], cluster);
    // Median calibration 210 ops/s, held 30 ms here and 45 ms there: 210 x 2/3 = 140.
    expect(row).toMatchObject({ granularity: 'document', bound: 'contention' });
    expect(row!.predicted).toBeCloseTo(140, 10);
    expect(row!.calibrated).toMatchObject({ median: 210, min: 200, max: 400 });
    expect(row!.measured).toMatchObject({ median: 140, min: 120, max: 150 });
    expect(row!.error).toBe(0);
    // Halves: odd trials (200, 210) median 205, even (400): 190 apart of 210; measured 130 vs 150 of 140.
    expect(row!.halvesApart.calibrated).toBeCloseTo(195 / 210, 10);
    expect(row!.halvesApart.measured).toBeCloseTo(20 / 140, 10);
    expect(checkTable([row!])).toContain('| document | 210 (200–400) | 140 | 140 (120–150) | 0% | 93% / 14% | - | contention |');
  });

  it('one row per granularity, in the order first measured', () => {
    const rows = checkRows([{ ...trial(30, 20), granularity: 'global' }, trial(200, 150), { ...trial(32, 21), granularity: 'global' }], cluster);
    expect(rows.map((r) => r.granularity)).toEqual(['global', 'document']);
    expect(rows[0]!.measured.values).toEqual([20, 21]);
  });

  it("says how far one half of the trials lies from the other, the check's own repeatability", () => {
    expect(halvesApart([100, 80, 100, 80])).toBeCloseTo(20 / 90, 10);
    expect(halvesApart([100, 100, 100])).toBe(0);
    expect(halvesApart([100])).toBeNaN();
  });

  it('passes only when every granularity is within the target, and says when the trials were too noisy to tell', () => {
    const rows = checkRows(
      [trial(210, 140), trial(210, 140), { ...trial(30, 20), granularity: 'global' }, { ...trial(30, 20), granularity: 'global' }],
      cluster,
    );
    expect(rows.map((r) => r.error)).toEqual([expect.closeTo(0, 10), expect.closeTo(0, 10)]);
    expect(checkVerdict(rows)).toBe('Within ±20% for every granularity: yes.');

    const steadyMiss = checkRows([trial(210, 100), trial(210, 100)], cluster);
    expect(checkVerdict(steadyMiss)).toBe('Within ±20% for every granularity: no (document 40%).');

    const noisyMiss = checkRows([trial(210, 60), trial(210, 140)], cluster);
    expect(checkVerdict(noisyMiss)).toBe(
      'Within ±20% for every granularity: no (document 40%). For document the two halves of the trials already differ by more than that: more trials (--trials) would tell.',
    );
  });

  it("pools every trial's probes on one p99 trend, each kind of operation's requests the median over the trials that ran it", () => {
    const withP99 = (refresh: number, curve: P99Point[], extra = {}): Calibration => ({
      ...document,
      p99: { objectiveMs: 250, curve, requestsByOp: { rename: { ...noRequests(), write: 4, refresh }, ...extra } },
    });
    const median = medianCalibration([
      withP99(1, [{ rate: 40, p99Ms: 100 }]),
      withP99(5, [{ rate: 80, p99Ms: 300 }], { delete: { ...noRequests(), write: 2 } }),
      withP99(3, [{ rate: 60, p99Ms: 200 }]),
    ]);
    expect(median.p99?.curve).toHaveLength(3);
    expect(median.p99?.requestsByOp).toEqual({ rename: { write: 4, read: 0, refresh: 3, search: 0 }, delete: { write: 2, read: 0, refresh: 0, search: 0 } });
    const [row] = checkRows([{ granularity: 'tree', single: median, cluster: { ...document, capacity: 50 } }], slower({ refresh: 40 }));
    expect(row!.tail).toEqual({ op: 'rename', addedMs: 120 });
    expect(checkTable([row!])).toContain('| rename +120 ms |');
  });

  it('alternates which side a trial measures first', () => {
    expect(sidesInTrial(1)).toEqual(['single', 'cluster']);
    expect(sidesInTrial(2)).toEqual(['cluster', 'single']);
  });

  it('measures the cluster under the load it is predicted to carry: bisects to the rate whose added latency predicts that rate', async () => {
    const tree: Calibration = {
      ...document,
      granularity: 'tree',
      capacity: 100,
      requestMix: { write: 3, read: 1, refresh: 0.05, search: 0 },
      p99: {
        objectiveMs: 250,
        curve: [
          { rate: 20, p99Ms: 30 },
          { rate: 100, p99Ms: 250 },
        ],
        requestsByOp: { rename: { ...noRequests(), refresh: 1 } },
      },
    };
    // A refresh takes 2 ms longer there for each operation a second: the load, not the cluster alone, sets it.
    const offered: PerKind[] = [];
    const idle = slower({ refresh: 10, search: 3 });
    const settled = await loadedPrediction(
      tree,
      idle,
      async (rates) => {
        offered.push(rates);
        return { ...noRequests(), refresh: (2 * rates.write) / 3, search: Number.NaN };
      },
      8,
    );
    const atSettled = predict(tree, slower({ refresh: 2 * settled.capacity, search: 3 })).capacity;
    const bracket = predict(tree, slower({})).capacity / 2 ** 8;
    expect(Math.abs(atSettled - settled.capacity)).toBeLessThanOrEqual(2 * bracket + 1e-9);
    expect(settled.capacity).toBeLessThan(predict(tree, idle).capacity);
    // The load offered is the calibration's request mix at each step's rate; a kind the load left unmeasured keeps its idle figure.
    expect(settled.steps).toHaveLength(8);
    expect(offered).toEqual(settled.steps.map((step) => ({ write: 3 * step.rate, read: step.rate, refresh: 0.05 * step.rate, search: 0 })));
    expect(settled.addedMs.search).toBe(3);
  });
});
