/** The recreate-index fault on the real store: asked without force it is refused while a channel waiter is queued, then forced; the next incarnation's tokens are larger. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { epochOf } from '../../faults/checker.js';
import { injectFault } from '../../faults/inject.js';
import { FaultNotifier } from '../../faults/wake.js';
import { FAULTS_NAMESPACE, TTL_MS } from '../../faults/workload.js';
import { createLockService } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { closeTestClient, freshLockIndex, testClient } from '../support/engine.js';

let client: SearchClient;
let index: string;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'faults-recreate');
});

afterAll(async () => {
  await closeTestClient(client);
});

describe('the recreate-index fault', () => {
  it('is refused without force while a channel waiter is queued, then forced: the waiter is dropped untold, and tokens continue above', async () => {
    const notifier = new FaultNotifier({ thrown: 0, duplicated: 0, lost: 0, gone: 0 });
    const { service: engine } = createLockService({ client, index, settings: { maxClockSkewMs: 50, notifier } });
    const lock = { namespace: FAULTS_NAMESPACE, granularity: 'document' as const, ids: ['k0'], mode: 'exclusive' as const, ttlMs: TTL_MS };
    const holder = await engine.acquire({ ...lock, owner: 'holder', waitMs: 0 });
    const { channel, wake } = notifier.open('c1', 0);
    const queued = await engine.acquireOrQueue({ ...lock, owner: 'c1', waitMs: 0, requestId: 'c1-0', queueTtlMs: 10_000, wake });
    expect(queued).toMatchObject({ status: 'queued' });
    const lines: string[] = [];
    const injection = await injectFault('recreate-index', {
      client,
      index,
      nodes: [],
      startedAt: Date.now(),
      durationMs: 400,
      stopped: () => false,
      log: (line) => lines.push(line),
      waiting: () => notifier.waiting(),
    });
    expect(injection.injected).toBe(true);
    expect(injection.what).toMatch(/refused without force \(1 live tickets, 1 on a wake channel\), forced: 1 tickets dropped, 1 channel waiters/);
    const [, before, after] = /epoch (\d+) -> (\d+)/.exec(injection.what) ?? [];
    expect(Number(after)).toBe(Number(before) + 1);
    // The old holder's lease went with its incarnation: the lock is free, and its new token is larger.
    const next = await engine.acquire({ ...lock, owner: 'next', waitMs: 0 });
    expect(epochOf(next.fencingToken)).toBe(epochOf(holder.fencingToken) + 1n);
    expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(holder.fencingToken));
    // Nobody tells the dropped waiter: it is still waiting, and ends on its own timeout.
    expect(notifier.waiting()).toBe(1);
    expect(await notifier.listen(channel, 10)).toEqual({ kind: 'timed-out' });
  });
});
