/** The engine-only layer: the kit's workload through the engine in process, on the real node, judged like the HTTP runs. */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createElasticsearchClient } from '../../functions/store/index.js';
import { DEFAULT_SEARCH, searchCapacity } from '../../loadtests/runner/capacity.js';
import { defaultConfig } from '../../loadtests/runner/config.js';
import { CALIBRATION_MAX_LOAD, EngineLayer } from '../../loadtests/runner/engine/layer.js';
import { defaultWorkload } from '../../loadtests/shared/defaults.js';
import { DEFAULT_OBJECTIVE } from '../../loadtests/shared/objective.js';

const apiKey = inject('esApiKey');
const client = createElasticsearchClient({ url: inject('esUrl'), ...(apiKey ? { apiKey } : {}) });
let layer: EngineLayer;

beforeAll(async () => {
  layer = await EngineLayer.open(client, defaultConfig(), `test${process.pid}`);
  // Not judged: a node the test run just started compiles its hot paths during the first probe, whose
  // p99 then came out at 260-505 ms when this file ran alone (loadtest:model warms up the same way).
  await layer.probe(defaultWorkload(), 'tree', 20, 2, 0, DEFAULT_OBJECTIVE);
});
afterAll(async () => {
  await layer.close();
  await client.close();
});

describe('the engine-only layer', () => {
  it('a light probe meets the objective: goodput about the offered rate, safe, and it counts its Elasticsearch requests', async () => {
    // Judged without the latency objective: a busy test machine's p99 says nothing about the layer (the kit measures latency).
    const run = await layer.probe(defaultWorkload(), 'tree', 20, 2, 1, { ...DEFAULT_OBJECTIVE, p99Ms: 60_000 });
    expect(run.verdict.good, run.verdict.reasons.join('; ')).toBe(true);
    expect(run.stage.offered).toBe(40);
    expect(run.stage.goodput).toBeGreaterThanOrEqual(38);
    expect(run.safety.ok).toBe(true);
    expect(run.safety.holds).toBe(run.stage.goodput);
    // Every operation acquires and releases: at least two requests each.
    expect(run.esRequests).toBeGreaterThanOrEqual(2 * run.stage.goodput);
  });

  it('feeds the same capacity search as the HTTP layer', async () => {
    const search = await searchCapacity((rate) => layer.probe(defaultWorkload(), 'document', rate, 1, 1, DEFAULT_OBJECTIVE).then((run) => run.verdict), {
      ...DEFAULT_SEARCH,
      startRate: 10,
      maxProbes: 2,
    });
    expect(search.capacity).toBeGreaterThan(0);
    expect(search.probes).toHaveLength(2);
  });

  it('calibrates the deployment model at a light load, not near the capacity where contention sets the figures', async () => {
    // Global from 20 ops/s: its lightest met probe is close to its capacity, so a lighter one is run.
    const result = await layer.searchCapacity(defaultWorkload(), 'global', 1, {
      probeS: 1,
      objective: DEFAULT_OBJECTIVE,
      search: { ...DEFAULT_SEARCH, startRate: 20, maxProbes: 4 },
    });
    expect(result.capacity.capacity).toBeGreaterThan(0);
    expect(result.calibration, 'a calibration').toBeDefined();
    expect(result.calibratedAt).toBeLessThanOrEqual(Math.max(DEFAULT_SEARCH.minRate, result.capacity.capacity * CALIBRATION_MAX_LOAD));
    expect(result.calibration!.capacity).toBe(result.capacity.capacity);
    // Uncontended, an operation is an acquire and a release: a few requests, not a retry storm.
    expect(result.calibration!.requestsPerOp).toBeLessThan(8);
    expect(result.safetyOk).toBe(true);
  });

  it('sees what document locks let through: creates under a directory being renamed', async () => {
    const workload = { ...defaultWorkload(), mix: { read: 0, edit: 0, rename: 50, create: 50 }, criticalSectionMs: 40 };
    const document = await layer.probe(workload, 'document', 60, 2, 1, DEFAULT_OBJECTIVE);
    const tree = await layer.probe(workload, 'tree', 60, 2, 1, DEFAULT_OBJECTIVE);
    expect(document.safety.ok).toBe(true);
    expect(document.safety.phantomCount).toBeGreaterThan(0);
    expect(tree.safety.ok).toBe(true);
    expect(tree.safety.phantomCount).toBe(0);
  });
});
