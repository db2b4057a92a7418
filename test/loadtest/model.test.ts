/** The deployment model's arithmetic (loadtests/runner/model.ts); its check against a real 3-node cluster is `npm run loadtest:model`. */
import { describe, expect, it } from 'vitest';
import {
  type Calibration,
  type Deployment,
  deploymentFromHop,
  noRequests,
  type PerKind,
  predict,
  relativeError,
  requestMixOf,
} from '../../loadtests/runner/model.js';
import { checkRows, checkTable, checkVerdict, halvesApart, medianCalibration, sidesInTrial } from '../../loadtests/runner/model-check.js';

const document: Calibration = {
  strategy: 'document',
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
    const tree = { ...document, strategy: 'tree', requestMix: { write: 2, read: 1, refresh: 0.5, search: 1 } };
    // 2 x 1 + 1 x 0 + 0.5 x 8 + 1 x 2 = 8 ms more per operation.
    const prediction = predict(tree, slower({ write: 1, refresh: 8, search: 2 }));
    expect(prediction.operationMs).toBe(10 + 8 + 2 + 20);
    expect(prediction.capacity).toBeCloseTo((200 * 30) / 38, 5);
  });

  it('contention weighs a lock by the files it covers: a slow directory lock over many files counts for each of them', () => {
    const tree = { ...document, strategy: 'tree', perCoveredFile: { esMsPerOp: 30, requestMix: { write: 2, read: 0, refresh: 1, search: 1 } } };
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
    const global = { ...document, strategy: 'global', capacity: 40 };
    const prediction = predict(global, deploymentFromHop({ functions: 50, nodes: 3, replicas: 1, hopMs: 5 }));
    expect(prediction.bound).toBe('serialisation');
    // Held 20 + 10 = 30 ms here, 40 ms with 2 writes x 5 ms more: each handoff waits that much longer.
    expect(prediction.capacity).toBeCloseTo((40 * 30) / 40, 5);
  });

  it('without replicas a write waits for no other node', () => {
    expect(deploymentFromHop({ functions: 50, nodes: 1, replicas: 0, hopMs: 5 }).addedMs).toEqual(noRequests());
  });

  it('measures its error relative to what was measured', () => {
    expect(relativeError(90, 100)).toBeCloseTo(0.1, 10);
    expect(relativeError(120, 100)).toBeCloseTo(0.2, 10);
  });
});

describe("the model's check on a cluster it did not see", () => {
  // The check's cluster: writes 7.5 ms slower, so 2 writes make the 30 ms hold 45 ms (x 2/3).
  const cluster = slower({ write: 7.5 });
  const trial = (single: number, cluster: number, esMsPerOp = 10) => ({
    strategy: 'document',
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
    expect(row).toMatchObject({ strategy: 'document', bound: 'contention' });
    expect(row!.predicted).toBeCloseTo(140, 10);
    expect(row!.calibrated).toMatchObject({ median: 210, min: 200, max: 400 });
    expect(row!.measured).toMatchObject({ median: 140, min: 120, max: 150 });
    expect(row!.error).toBe(0);
    // Halves: odd trials (200, 210) median 205, even (400): 190 apart of 210; measured 130 vs 150 of 140.
    expect(row!.halvesApart.calibrated).toBeCloseTo(195 / 210, 10);
    expect(row!.halvesApart.measured).toBeCloseTo(20 / 140, 10);
    expect(checkTable([row!])).toContain('| document | 210 (200–400) | 140 | 140 (120–150) | 0% | 93% / 14% | contention |');
  });

  it('one row per strategy, in the order first measured', () => {
    const rows = checkRows([{ ...trial(30, 20), strategy: 'global' }, trial(200, 150), { ...trial(32, 21), strategy: 'global' }], cluster);
    expect(rows.map((r) => r.strategy)).toEqual(['global', 'document']);
    expect(rows[0]!.measured.values).toEqual([20, 21]);
  });

  it("says how far one half of the trials lies from the other, the check's own repeatability", () => {
    expect(halvesApart([100, 80, 100, 80])).toBeCloseTo(20 / 90, 10);
    expect(halvesApart([100, 100, 100])).toBe(0);
    expect(halvesApart([100])).toBeNaN();
  });

  it('passes only when every strategy is within the target, and says when the trials were too noisy to tell', () => {
    const rows = checkRows([trial(210, 140), trial(210, 140), { ...trial(30, 20), strategy: 'global' }, { ...trial(30, 20), strategy: 'global' }], cluster);
    expect(rows.map((r) => r.error)).toEqual([expect.closeTo(0, 10), expect.closeTo(0, 10)]);
    expect(checkVerdict(rows)).toBe('Within ±20% for every strategy: yes.');

    const steadyMiss = checkRows([trial(210, 100), trial(210, 100)], cluster);
    expect(checkVerdict(steadyMiss)).toBe('Within ±20% for every strategy: no (document 40%).');

    const noisyMiss = checkRows([trial(210, 60), trial(210, 140)], cluster);
    expect(checkVerdict(noisyMiss)).toBe(
      'Within ±20% for every strategy: no (document 40%). For document the two halves of the trials already differ by more than that: more trials (--trials) would tell.',
    );
  });

  it('alternates which side a trial measures first', () => {
    expect(sidesInTrial(1)).toEqual(['single', 'cluster']);
    expect(sidesInTrial(2)).toEqual(['cluster', 'single']);
  });
});
