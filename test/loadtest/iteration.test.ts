/**
 * The kit's one iteration (loadtests/shared/iteration.ts), against a scripted lock service on a
 * virtual clock: what it asks for, how it retries, what it reports. The k6 script and the engine
 * driver both run it; their end-to-end runs are smoke.test.ts and engine-driver.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { type IterationPlan, RELEASE_ATTEMPTS, runIteration } from '../../loadtests/shared/iteration.js';
import type { AcquireAnswer, AcquireRequest, IterationDriver, IterationEnd, ReleaseAnswer } from '../../loadtests/shared/lock-driver.js';
import type { HoldRecord, Operation } from '../../loadtests/shared/workload.js';

const rename: Operation = { kind: 'rename', target: '/a', files: ['/a/x.txt', '/a/y.txt'] };
const read: Operation = { kind: 'read', target: '/a/x.txt', files: ['/a/x.txt'] };
const granted = (token = 't1'): AcquireAnswer => ({ kind: 'granted', durationMs: 3, grant: { leaseToken: token, fencingToken: '42', expiresAt: 99_000 } });
const busy = (retryAfterMs?: number): AcquireAnswer => ({ kind: 'conflict', durationMs: 2, ...(retryAfterMs ? { retryAfterMs } : {}) });

/** A lock service that answers from scripts, on a clock that only the iteration's sleeps and the requests move. */
function harness(script: { acquire: AcquireAnswer[]; release?: ReleaseAnswer[]; stopAfterRequests?: number }) {
  let clock = 10_000;
  const requests: AcquireRequest[] = [];
  const releases: string[] = [];
  const events: string[] = [];
  const holds: HoldRecord[] = [];
  const ends: IterationEnd[] = [];
  const problems: string[] = [];
  const sleeps: number[] = [];
  const driver: IterationDriver = {
    locks: {
      async acquire(request) {
        requests.push(request);
        clock += 5;
        return script.acquire[Math.min(requests.length - 1, script.acquire.length - 1)]!;
      },
      async release(leaseToken) {
        releases.push(leaseToken);
        clock += 2;
        return script.release?.[releases.length - 1] ?? { ok: true, outcome: 'released' };
      },
    },
    metrics: {
      offered: (tags) => events.push(`offered ${tags.stage} ${tags.op}`),
      answered: (answer) => events.push(`answered ${answer.kind}`),
      retried: (delayMs) => events.push(`retried ${delayMs}`),
      acquired: (latencyMs) => events.push(`acquired ${latencyMs}`),
      held: (record) => holds.push(record),
      ended: (end) => ends.push(end),
      problem: (what, detail) => problems.push(`${what}: ${detail}`),
    },
    now: () => clock,
    async sleep(ms) {
      sleeps.push(ms);
      clock += ms;
    },
    random: () => 0.5,
    stopped: () => script.stopAfterRequests !== undefined && requests.length >= script.stopAfterRequests,
  };
  return { driver, requests, releases, events, holds, ends, problems, sleeps };
}

const plan = (op: Operation, overrides: Partial<IterationPlan> = {}): IterationPlan => ({
  granularity: 'document',
  namespace: 'ns',
  ttlMs: 15_000,
  retry: { budgetMs: 3000, baseDelayMs: 10, maxDelayMs: 200, honourRetryAfter: true },
  criticalSectionMs: 20,
  operations: { next: () => op },
  ...overrides,
});
const start = { index: 7, stage: 'steady', owner: 'run-document-vu1', requestId: 'run-document-vu1-steady-7' };

describe('the one iteration', () => {
  it("asks for the granularity's lock, holds it for the critical section, releases it and records the hold", async () => {
    const h = harness({ acquire: [granted()] });
    const end = await runIteration(h.driver, plan(rename), start);
    expect(h.requests).toEqual([
      {
        namespace: 'ns',
        granularity: 'document',
        ids: ['/a/x.txt', '/a/y.txt'],
        mode: 'exclusive',
        owner: 'run-document-vu1',
        ttlMs: 15_000,
        requestId: start.requestId,
      },
    ]);
    expect(h.releases).toEqual(['t1']);
    expect(h.sleeps).toEqual([20]);
    expect(h.events).toEqual(['offered steady rename', 'answered granted', 'acquired 5']);
    expect(h.holds).toEqual([
      {
        granularity: 'document',
        namespace: 'ns',
        op: 'rename',
        mode: 'exclusive',
        keys: ['/a/x.txt', '/a/y.txt'],
        fence: '42',
        start: 10_005,
        end: 10_025,
        expiresAt: 99_000,
        owner: 'run-document-vu1',
        release: 'released',
        target: '/a',
      },
    ]);
    expect(end).toEqual({ outcome: 'done', release: 'released', durationMs: 27, acquireMs: 5, backoffMs: 0, releaseMs: 2, files: 2 });
    expect(h.ends).toEqual([end]);
  });

  it('a tree lock names the path, shared for a read; the trace index reaches the operation source', async () => {
    const h = harness({ acquire: [granted()] });
    const indexes: number[] = [];
    const operations = {
      next: (_random: () => number, index?: number) => {
        indexes.push(index!);
        return read;
      },
    };
    await runIteration(h.driver, plan(read, { granularity: 'tree', operations }), start);
    expect(h.requests[0]).toMatchObject({ granularity: 'tree', path: '/a/x.txt', mode: 'shared' });
    expect(h.requests[0]).not.toHaveProperty('ids');
    expect(indexes).toEqual([7]);
  });

  it("retries a busy lock after the backoff, at least the server's hint, and counts the wait in the latency", async () => {
    const h = harness({ acquire: [busy(), busy(150), granted()] });
    const end = await runIteration(h.driver, plan(read), start);
    // Backoff 10 ms doubling, equal jitter at 0.5: 8 ms; then the 150 ms hint (under the 200 ms cap): 113 ms.
    expect(h.events).toEqual(['offered steady read', 'answered conflict', 'retried 8', 'answered conflict', 'retried 113', 'answered granted', 'acquired 136']);
    expect(h.requests.map((r) => r.requestId)).toEqual([start.requestId, start.requestId, start.requestId]);
    expect(end).toMatchObject({ outcome: 'done', acquireMs: 136, backoffMs: 121 });
  });

  it('gives up on a lock still busy at the retry budget: contention, not an error, and nothing to release', async () => {
    const h = harness({ acquire: [busy()] });
    const end = await runIteration(h.driver, plan(read, { retry: { budgetMs: 300, baseDelayMs: 10, maxDelayMs: 200, honourRetryAfter: true } }), start);
    expect(end.outcome).toBe('gave-up');
    expect(h.releases).toEqual([]);
    expect(h.holds).toEqual([]);
    expect(h.problems).toEqual([]);
    const waited = h.sleeps.reduce((sum, ms) => sum + ms, 0);
    expect(waited).toBeLessThanOrEqual(300);
    expect(h.requests.length).toBeGreaterThan(2);
  });

  it('an unavailable store is retried too, and is an error when it stays so past the budget', async () => {
    const h = harness({ acquire: [{ kind: 'unavailable', durationMs: 1 }] });
    const end = await runIteration(h.driver, plan(read, { retry: { budgetMs: 100, baseDelayMs: 10, maxDelayMs: 50, honourRetryAfter: true } }), start);
    expect(end).toMatchObject({ outcome: 'error', status: 503 });
    expect(h.problems).toEqual(['acquire 503: store unavailable until the retry budget ran out']);
  });

  it('an error answer ends the operation at once, with its status and words', async () => {
    const h = harness({ acquire: [{ kind: 'error', status: 400, detail: 'bad path', durationMs: 1 }] });
    const end = await runIteration(h.driver, plan(read), start);
    expect(end).toMatchObject({ outcome: 'error', status: 400 });
    expect(h.requests).toHaveLength(1);
    expect(h.problems).toEqual(['acquire 400: bad path']);
  });

  it('retries a release that got a 503 or no answer, and stops at once on any other failure', async () => {
    const flaky = harness({
      acquire: [granted()],
      release: [
        { ok: false, status: 503, detail: 'busy' },
        { ok: false, status: 0, detail: 'timeout' },
        { ok: true, outcome: 'expired' },
      ],
    });
    const end = await runIteration(flaky.driver, plan(read), start);
    expect(flaky.releases).toEqual(['t1', 't1', 't1']);
    expect(end).toMatchObject({ outcome: 'done', release: 'expired' });
    expect(flaky.holds[0]!.release).toBe('expired');

    const refused = harness({ acquire: [granted()], release: [{ ok: false, status: 400, detail: 'bad token' }] });
    expect(await runIteration(refused.driver, plan(read), start)).toMatchObject({ outcome: 'release-failed' });
    expect(refused.releases).toHaveLength(1);
    expect(refused.problems).toEqual(['release 400: bad token']);
    expect(refused.holds[0]!.release).toBe('error');

    const down = harness({ acquire: [granted()], release: Array.from({ length: 10 }, () => ({ ok: false, status: 503, detail: 'down' }) as const) });
    expect(await runIteration(down.driver, plan(read), start)).toMatchObject({ outcome: 'release-failed' });
    expect(down.releases).toHaveLength(RELEASE_ATTEMPTS);
  });

  it('stops where it stands once the run stops counting, and still releases what it holds', async () => {
    const beforeRetry = harness({ acquire: [busy()], stopAfterRequests: 1 });
    expect(await runIteration(beforeRetry.driver, plan(read), start)).toEqual({ outcome: 'interrupted' });
    expect(beforeRetry.requests).toHaveLength(1);

    const holding = harness({ acquire: [granted()], stopAfterRequests: 1 });
    expect(await runIteration(holding.driver, plan(read), start)).toEqual({ outcome: 'interrupted' });
    expect(holding.releases).toEqual(['t1']);
    expect(holding.holds).toHaveLength(1);
    // Its latency is not counted: the probe it belonged to is over.
    expect(holding.events).not.toContainEqual(expect.stringMatching(/^acquired/));
  });
});
