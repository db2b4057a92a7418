/** The waiting measurement (npm run loadtest:waiting): its own logic on made-up calls, then a short run of each mode on the real node. */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type EngineTarget, openEngineTarget } from '../../loadtests/runner/engine/target.js';
import { noRequests } from '../../loadtests/runner/model.js';
import { waitingChart, waitingTable } from '../../loadtests/runner/render/waiting.js';
import { fairnessOf, type WaitCall, waitFigures } from '../../loadtests/runner/waiting/analysis.js';
import { DEFAULT_WAITING, runWaitingMode, type WaitingRun } from '../../loadtests/runner/waiting/scenario.js';

const call = (caller: number, mode: WaitCall['mode'], orderAt: number, grantedAt?: number): WaitCall => ({
  caller,
  key: 'k',
  mode,
  arrivedAt: orderAt,
  orderAt,
  attempts: 1,
  ...(grantedAt === undefined ? { gaveUpAt: orderAt + 1_000 } : { grantedAt, heldAt: grantedAt + 5 }),
});

describe('the figures of a run (pure)', () => {
  it('counts a grant that went before earlier, incompatible callers, and writers that later readers passed', () => {
    const calls = [
      call(0, 'exclusive', 0, 100), // first come, first served
      call(1, 'exclusive', 10, 400), // passed by the two readers below (incompatible, later)
      call(2, 'shared', 20, 200),
      call(3, 'shared', 30, 200),
      call(4, 'shared', 40, 500), // after the writer: in order
      call(5, 'exclusive', 50), // gave up: not counted as overtaken
    ];
    const fairness = fairnessOf(calls);
    expect(fairness.overtakes).toBe(2);
    expect(fairness.overtakingGrants).toBe(2);
    expect(fairness.writersPassedByReaders).toBe(1);
    expect(fairness.writerLongestWaitPassed).toBe(400 + 5 - 10);
  });

  it('readers that share do not overtake one another, whatever their order', () => {
    expect(fairnessOf([call(0, 'shared', 0, 300), call(1, 'shared', 10, 100)]).overtakes).toBe(0);
  });

  it('gives the wait percentiles, the timeouts and the requests per grant', () => {
    const calls = [call(0, 'shared', 0, 95), call(1, 'shared', 0, 195), call(2, 'exclusive', 0)];
    const figures = waitFigures('polling', calls, { all: { ...noRequests(), write: 6, read: 4 }, acquire: { ...noRequests(), read: 4 } });
    expect(figures.grants).toBe(2);
    expect(figures.timeouts).toBe(1);
    expect(figures.wait.p50).toBe(150);
    expect(figures.wait.max).toBe(200);
    expect(figures.requestsPerGrant).toBe(5);
    expect(figures.acquireRequestsPerGrant).toBe(2);
    expect(figures.quantiles).toHaveLength(101);
  });
});

const apiKey = inject('esApiKey');
let target: EngineTarget;
const runs: WaitingRun[] = [];
// Small and short: 12 callers on one lock, 3 s of arrivals per mode.
const scenario = { ...DEFAULT_WAITING, callers: 12, keys: 1, seconds: 3, budgetMs: 8_000 };

beforeAll(async () => {
  target = await openEngineTarget({ connection: { url: inject('esUrl').split(','), ...(apiKey ? { apiKey } : {}) } });
});
afterAll(async () => {
  await target.close();
});

describe('a short run of each mode on the real node', () => {
  it('polling: the figures are computed, the requests counted, every hold safe', async () => {
    const run = await runWaitingMode(target, 'polling', scenario, { namespace: `wait-test-${process.pid}-polling` });
    runs.push(run);
    const f = run.figures;
    expect(f.grants).toBeGreaterThan(0);
    expect(f.requestsPerGrant).toBeGreaterThan(0);
    expect(f.acquireRequestsPerGrant).toBeGreaterThan(0);
    expect(f.requestsPerGrant).toBeGreaterThanOrEqual(f.acquireRequestsPerGrant);
    expect(f.attemptsPerGrant).toBeGreaterThanOrEqual(1);
    expect(f.wait.max).toBeGreaterThanOrEqual(f.wait.p99);
    expect(f.wait.p99).toBeGreaterThanOrEqual(f.wait.p50);
    expect(Number.isFinite(f.overtakes)).toBe(true);
    expect(run.safety.ok).toBe(true);
    expect(run.safety.holds).toBe(f.grants);
    expect(run.leftoverLocks).toBe(0);
  });

  it('queueing: nobody overtakes, no writer is passed by a later reader', async () => {
    const run = await runWaitingMode(target, 'queueing', scenario, { namespace: `wait-test-${process.pid}-queueing` });
    runs.push(run);
    const f = run.figures;
    expect(f.grants).toBeGreaterThan(0);
    expect(f.overtakes).toBe(0);
    expect(f.writersPassedByReaders).toBe(0);
    expect(f.requestsPerGrant).toBeGreaterThan(0);
    expect(run.safety.ok).toBe(true);
    expect(run.leftoverLocks).toBe(0);
    // Granted calls were served in the call that queued, or after a contention answer tried again.
    expect(f.attemptsPerGrant).toBeGreaterThanOrEqual(1);
  });

  it('renders both: a table row per mode and one SVG with both charts', () => {
    expect(runs).toHaveLength(2);
    expect(waitingTable(runs).split('\n')).toHaveLength(4);
    const svg = waitingChart(runs, scenario);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/<svg /g)).toHaveLength(3);
    expect(svg).toContain('polling');
    expect(svg).toContain('queueing');
  });
});
