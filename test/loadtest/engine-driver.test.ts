/** The engine driver: the kit's workload through the engine in process, on the real node, judged like the HTTP runs. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_SEARCH } from '../../loadtests/runner/capacity.js';
import { checkHolds, parseHoldLog } from '../../loadtests/runner/checker.js';
import { defaultConfig } from '../../loadtests/runner/config.js';
import { httpAnswer } from '../../loadtests/runner/engine/engine-lock-driver.js';
import { driveEngine, type EngineDriverOptions, probeNamespace } from '../../loadtests/runner/engine/probe.js';
import { requestKind } from '../../loadtests/runner/engine/request-count.js';
import { engineDriverOptions, engineProbe, searchEngineCapacity } from '../../loadtests/runner/engine/search.js';
import { type EngineTarget, openEngineTarget } from '../../loadtests/runner/engine/target.js';
import { defaultWorkload } from '../../loadtests/shared/defaults.js';
import { HOLD_MARKER, type HoldRecord } from '../../loadtests/shared/workload.js';
import { LockContentionError, LockHeldError, StoreUnavailableError, ValidationError } from '../../packages/engine/src/errors.js';
import { ROOT } from './run.js';

const apiKey = inject('esApiKey');
let target: EngineTarget;

beforeAll(async () => {
  target = await openEngineTarget({ connection: { url: inject('esUrl').split(','), ...(apiKey ? { apiKey } : {}) } });
  // Not judged: a node the test run just started compiles its hot paths during the first probe, whose
  // p99 then came out at 256-501 ms when this file ran alone (loadtest:model warms up the same way).
  await driveEngine(options({ probeS: 2, runId: `warm${process.pid}` }), 20);
});
afterAll(async () => {
  await target.close();
});

const options = (overrides: Partial<EngineDriverOptions> = {}): EngineDriverOptions => ({
  ...engineDriverOptions(defaultConfig(), { target, granularity: 'tree', workload: defaultWorkload(), runId: `test${process.pid}`, probeS: 1 }),
  ...overrides,
});

describe('the kinds of request the deployment model weighs', () => {
  it('tells writes, reads, refreshes and searches apart by method and path', () => {
    expect(requestKind('POST', '/_bulk')).toBe('write');
    expect(requestKind('PUT', '/locks/_create/a')).toBe('write');
    expect(requestKind('PUT', '/locks/_doc/a')).toBe('write');
    expect(requestKind('DELETE', '/locks/_doc/a')).toBe('write');
    expect(requestKind('POST', '/locks/_mget')).toBe('read');
    expect(requestKind('GET', '/locks/_doc/a')).toBe('read');
    expect(requestKind('POST', '/locks/_refresh')).toBe('refresh');
    expect(requestKind('POST', '/locks/_search')).toBe('search');
    expect(requestKind('GET', '/locks/_search_shards')).toBe('search');
    expect(requestKind('DELETE', '/locks')).toBeUndefined();
    expect(requestKind('GET', '/_cluster/health')).toBeUndefined();
  });
});

describe('the engine driver', () => {
  it('a light probe meets the objective: goodput about the offered rate, every critical section logged and safe, nothing left behind', async () => {
    // Judged without the latency objective: the p99 of a test machine busy with two search servers and
    // other test files says nothing about the driver (latency is the benchmarks' and the kit's to measure).
    const objective = { ...defaultConfig().capacity.objective, p99Ms: 60_000 };
    const run = await driveEngine(options({ probeS: 2, objective }), 20);
    expect(run.verdict.good, run.verdict.reasons.join('; ')).toBe(true);
    expect(run.stage.offered).toBe(40);
    expect(run.dropped).toBe(0);
    expect(run.stage.goodput).toBeGreaterThanOrEqual(38);
    expect(run.stage.errors).toBe(0);
    expect(run.holdLines.every((line) => line.startsWith(HOLD_MARKER))).toBe(true);
    expect(run.safety.ok).toBe(true);
    expect(run.safety.holds).toBe(run.stage.goodput);
    expect(run.leftoverLocks).toBe(0);
    // The namespace is emptied after the probe (the tree granularity's ancestor markers too).
    await target.client.indices.refresh({ index: target.index });
    expect((await target.client.count({ index: target.index, query: { term: { namespace: run.namespace } } })).count).toBe(0);
    // Every operation acquires and releases: at least two requests each.
    expect(run.esRequests).toBeGreaterThanOrEqual(2 * run.stage.goodput);
    // By kind, for the deployment model: each operation writes its lock and its release; nothing is left unclassified but the probe's own sweep.
    const { write, read, refresh, search } = run.esRequestsByKind;
    expect(write).toBeGreaterThanOrEqual(2 * run.stage.goodput);
    expect(run.esWrites).toBe(write);
    expect(write + read + refresh + search).toBe(run.esRequests);
    // Weighted by the files each lock covers (renames cover a directory): at least one write per covered file.
    expect(run.perCoveredFile.requestMix.write).toBeGreaterThanOrEqual(2);
    expect(run.perCoveredFile.esMsPerOp).toBeGreaterThan(0);
    // Each kind's latency under this load, timed from the client's request and response events: writes answered, in less than the whole operation.
    expect(run.esMsByKind.write).toBeGreaterThan(0);
    expect(run.esMsByKind.write).toBeLessThan(run.esMsPerOp);
    expect(run.schedule.peakInFlight).toBeLessThanOrEqual(defaultConfig().schedule.vus.max);
  });

  it('its hold log is what the checker reads: forged overlapping holds are found', async () => {
    // Every operation an exclusive edit under the global lock: any two holds conflict.
    const workload = { ...defaultWorkload(), mix: { read: 0, edit: 100, rename: 0 } };
    const run = await driveEngine(options({ granularity: 'global', workload }), 10);
    expect(run.safety.ok).toBe(true);
    const holds = parseHoldLog(run.holdLines.join('\n')).holds;
    expect(holds.length).toBeGreaterThanOrEqual(2);
    const [first, second] = [...holds].sort((a, b) => a.start - b.start) as [HoldRecord, HoldRecord];
    // The second grant moved into the first one's critical section (its fence still larger).
    const forged = { ...second, start: first.start + 1, end: first.end + 5 };
    const lines = run.holdLines.filter((line) => !line.includes(`"fence":"${second.fence}"`)).concat(HOLD_MARKER + JSON.stringify(forged));
    const report = checkHolds(parseHoldLog(lines.join('\n')).holds);
    expect(report.ok).toBe(false);
    expect(report.violations.some((finding) => finding.kind === 'overlap')).toBe(true);
  });

  it('caps operations in flight and counts the arrivals it drops (k6 maxVUs)', async () => {
    const workload = { ...defaultWorkload(), criticalSectionMs: 100 };
    const run = await driveEngine(options({ workload, maxInFlight: 2 }), 40);
    expect(run.schedule.peakInFlight).toBe(2);
    expect(run.dropped).toBeGreaterThan(10);
    expect(run.stage.offered + run.dropped).toBe(40);
    expect(run.verdict.good).toBe(false);
    expect(run.verdict.dropped).toBe(run.dropped);
  });

  it('feeds the same capacity search as the HTTP layer, each probe in a namespace of its own', async () => {
    const result = await searchEngineCapacity(options({ granularity: 'document' }), { ...DEFAULT_SEARCH, startRate: 10, maxProbes: 2 });
    expect(result.search.capacity).toBeGreaterThan(0);
    expect(result.search.probes).toHaveLength(2);
    expect(result.runs).toHaveLength(2);
    expect(new Set(result.runs.map((run) => run.namespace)).size).toBe(2);
    expect(result.safetyOk).toBe(true);
    expect(result.requestsPerOp).toBeGreaterThanOrEqual(2);
    // The bare probe function keeps every run too.
    const probe = engineProbe(options());
    expect((await probe(5)).rate).toBe(5);
    expect(probe.runs).toHaveLength(1);
  });
});

describe('what an engine error means to the client (as k6/lock-api.ts reads the HTTP answer)', () => {
  it('a held lock or write contention is a conflict with a hint, a store outage is unavailable, the rest an error', () => {
    expect(httpAnswer(new LockHeldError({ conflicts: [], retryAfterMs: 120 }))).toMatchObject({ kind: 'conflict', status: 409, retryAfterMs: 120 });
    expect(httpAnswer(new LockContentionError({ keys: ['/a'], rounds: 3 }))).toMatchObject({ kind: 'conflict', status: 503, retryAfterMs: 1000 });
    expect(httpAnswer(new StoreUnavailableError({ operation: 'acquire' }, 'down'))).toMatchObject({ kind: 'unavailable', status: 503, retryAfterMs: 1000 });
    expect(httpAnswer(new ValidationError({ fields: [] }))).toMatchObject({ kind: 'error', status: 400 });
    expect(httpAnswer(new Error('boom'))).toMatchObject({ kind: 'error', status: 500, detail: 'Error: boom' });
  });

  it('probe namespaces stay unique and valid with long run ids', () => {
    const long = 'x'.repeat(80);
    const a = probeNamespace('document', long, 1);
    const b = probeNamespace('document', long, 12);
    expect(a).not.toBe(b);
    for (const name of [a, b]) expect(name).toMatch(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/);
  });
});

describe('npm run loadtest:engine at its edge', () => {
  const command = (args: string[], env: Record<string, string> = {}) => {
    const base = { ...process.env };
    for (const name of ['ES_URL', 'ES_API_KEY', 'DEBUG']) delete base[name];
    return spawnSync(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'loadtests/runner/commands/loadtest-engine.ts', ...args], {
      cwd: ROOT,
      env: { ...base, ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });
  };

  it('an unknown flag or a bad value is one line and exit 2; --help is the usage and exit 0; no Elasticsearch is exit 1', () => {
    for (const [args, says] of [
      [['--bogus'], /^error: --bogus: unknown flag \(see --help\)$/],
      [['--strategies', 'doc'], /^error: --strategies: unknown granularity "doc"/],
      [['--trials', '0'], /^error: --trials: must be a whole number from 1 to 20 \(got "0"\)/],
    ] as const) {
      const run = command([...args]);
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr.trimEnd()).toMatch(says);
    }
    const help = command(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run loadtest:engine/);
    const unreachable = command(['--strategies', 'tree'], { ES_URL: 'http://127.0.0.1:9999' });
    expect(unreachable.status, unreachable.stderr).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: cannot reach Elasticsearch at http:\/\/127\.0\.0\.1:9999$/m);
  });
});
