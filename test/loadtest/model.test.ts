/** The deployment model's arithmetic (scripts/loadtest/model.ts); its check against a real 3-node cluster is `npm run loadtest:model`. */
import { describe, expect, it } from 'vitest';
import { type Calibration, predict, relativeError } from '../../scripts/loadtest/model.js';

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
