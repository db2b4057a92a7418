/** The deployment model's arithmetic (scripts/loadtest/model.ts); its check against a real 3-node cluster is `npm run loadtest:model`. */
import { describe, expect, it } from 'vitest';
import { type Calibration, predict, relativeError } from '../../scripts/loadtest/model.js';
import { checkRows, checkTable, checkVerdict, halvesApart, medianCalibration, sidesInTrial } from '../../scripts/loadtest/model-check.js';

const document: Calibration = {
  strategy: 'document',
  capacity: 200,
  requestsPerOp: 4,
  writeShare: 0.5,
  esMsPerOp: 10,
  backoffMsPerOp: 2,
  criticalSectionMs: 20,
};
const dedicated = { functions: 50, nodes: 3, replicas: 1, colocated: false, hopMs: 1 };

describe('the deployment model', () => {
  it('few functions: each runs one operation at a time, so N / operation time bounds the rate', () => {
    const prediction = predict(document, { ...dedicated, functions: 2 });
    // 10 ms in Elasticsearch + 2 writes x 1 ms replica hop + 2 ms backoff + 20 ms critical section = 34 ms.
    expect(prediction.operationMs).toBe(34);
    expect(prediction.bound).toBe('functions');
    expect(prediction.capacity).toBeCloseTo(2000 / 34, 5);
  });

  it('many functions: the one primary shard is the limit; more nodes add nothing, co-located replicas take CPU', () => {
    expect(predict(document, dedicated)).toMatchObject({ bound: 'lock index', capacity: 200 });
    expect(predict(document, { ...dedicated, nodes: 9 }).capacity).toBe(200);
    expect(predict(document, { ...dedicated, colocated: true }).capacity).toBeCloseTo(200 / 1.5, 5);
  });

  it('global is serialised: every replicated write lengthens each handoff', () => {
    const global = { ...document, strategy: 'global', capacity: 40 };
    const prediction = predict(global, { ...dedicated, hopMs: 5 });
    expect(prediction.bound).toBe('serialisation');
    expect(prediction.capacity).toBeCloseTo(1000 / (25 + 10), 5);
  });

  it('measures its error relative to what was measured', () => {
    expect(relativeError(90, 100)).toBeCloseTo(0.1, 10);
    expect(relativeError(120, 100)).toBeCloseTo(0.2, 10);
  });
});

describe("the model's check on a cluster it did not see", () => {
  const colocated = { ...dedicated, colocated: true };
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
    const [row] = checkRows([trial(200, 120), trial(400, 150), trial(210, 140)], colocated);
    // Median calibration 210 ops/s; co-located replicas repeat half the requests: 210 / 1.5 = 140.
    expect(row).toMatchObject({ strategy: 'document', predicted: 140, bound: 'lock index' });
    expect(row!.calibrated).toMatchObject({ median: 210, min: 200, max: 400 });
    expect(row!.measured).toMatchObject({ median: 140, min: 120, max: 150 });
    expect(row!.error).toBe(0);
    // Halves: odd trials (200, 210) median 205, even (400): 190 apart of 210; measured 130 vs 150 of 140.
    expect(row!.halvesApart.calibrated).toBeCloseTo(195 / 210, 10);
    expect(row!.halvesApart.measured).toBeCloseTo(20 / 140, 10);
    expect(checkTable([row!])).toContain('| document | 210 (200–400) | 140 | 140 (120–150) | 0% | 93% / 14% | lock index |');
  });

  it('one row per strategy, in the order first measured', () => {
    const rows = checkRows([{ ...trial(30, 20), strategy: 'global' }, trial(200, 150), { ...trial(32, 21), strategy: 'global' }], colocated);
    expect(rows.map((r) => r.strategy)).toEqual(['global', 'document']);
    expect(rows[0]!.measured.values).toEqual([20, 21]);
  });

  it("says how far one half of the trials lies from the other, the check's own repeatability", () => {
    expect(halvesApart([100, 80, 100, 80])).toBeCloseTo(20 / 90, 10);
    expect(halvesApart([100, 100, 100])).toBe(0);
    expect(halvesApart([100])).toBeNaN();
  });

  it('passes only when every strategy is within the target, and says when the trials were too noisy to tell', () => {
    const rows = checkRows([trial(210, 140), trial(210, 140), { ...trial(30, 20), strategy: 'global' }, { ...trial(30, 20), strategy: 'global' }], colocated);
    expect(rows.map((r) => r.error)).toEqual([0, 0]);
    expect(checkVerdict(rows)).toBe('Within ±20% for every strategy: yes.');

    const steadyMiss = checkRows([trial(210, 100), trial(210, 100)], colocated);
    expect(checkVerdict(steadyMiss)).toBe('Within ±20% for every strategy: no (document 40%).');

    const noisyMiss = checkRows([trial(210, 60), trial(210, 140)], colocated);
    expect(checkVerdict(noisyMiss)).toBe(
      'Within ±20% for every strategy: no (document 40%). For document the two halves of the trials already differ by more than that: more trials (--trials) would tell.',
    );
  });

  it('alternates which side a trial measures first', () => {
    expect(sidesInTrial(1)).toEqual(['single', 'cluster']);
    expect(sidesInTrial(2)).toEqual(['cluster', 'single']);
  });
});
