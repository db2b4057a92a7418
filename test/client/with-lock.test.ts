/** withLock over the engine (in-process) and over HTTP: renewals, loss, release on every path. */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Locker, LockHttpClient, withLock } from '../../functions/client/index.js';
import { LeaseLostError, LockHeldError, StoreUnavailableError } from '../../functions/core/errors.js';
import type { LockService } from '../../functions/core/service.js';
import { deleteLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';
import { loadHandlers, setFunctionEnv } from '../support/functions.js';
import { serveHandlers } from '../support/http-bridge.js';

let client: SearchClient;
let engine: LockService;
let http: LockHttpClient;
let server: { baseUrl: string; close(): Promise<void> };
let httpIndex: string;

beforeAll(async () => {
  client = testClient();
  engine = engineOn(client, await freshLockIndex(client, 'withlock'));
  httpIndex = setFunctionEnv({ label: 'withlock-http' });
  server = await serveHandlers(await loadHandlers());
  http = new LockHttpClient({ baseUrl: server.baseUrl });
  // The container's first lock call creates the index (LOCK_ENSURE_INDEX): keep that out of the timed tests.
  await http.inspect({ namespace: 'warm-up', granularity: 'global' });
});
afterAll(async () => {
  await server.close();
  await deleteLockIndex(client, httpIndex);
  await closeTestClient(client);
});

const target = (id: string, ttlMs = 1_000) => ({ namespace: 'wl', granularity: 'document' as const, ids: [id], owner: 'worker', ttlMs });
const holders = async (locker: Locker, id: string) => {
  const states =
    locker instanceof LockHttpClient
      ? await locker.inspect({ namespace: 'wl', granularity: 'document', ids: [id] })
      : await locker.inspect({ namespace: 'wl', granularity: 'document', ids: [id] });
  return states.flatMap((state) => state.holders.filter((holder) => !holder.expired));
};

describe.each([
  ['engine', () => engine as Locker],
  ['HTTP client', () => http as Locker],
])('withLock over the %s', (_, locker) => {
  it('renews in the background during long work, with the refreshed token, and releases at the end', async () => {
    const renewals: string[] = [];
    const tokens = new Set<string>();
    const result = await withLock(
      locker(),
      target('long'),
      async ({ fencingToken, signal, leaseToken }) => {
        for (let step = 0; step < 5; step++) {
          await sleep(500);
          tokens.add(leaseToken());
          expect(signal.aborted).toBe(false);
        }
        // 2.5 TTLs later the lock is still ours: someone else is refused.
        await expect(locker().acquire({ ...target('long'), owner: 'intruder' })).rejects.toBeInstanceOf(LockHeldError);
        return fencingToken;
      },
      { onRenew: ({ fencingToken }) => renewals.push(fencingToken) },
    );
    expect(renewals.length).toBeGreaterThanOrEqual(3);
    expect(new Set(renewals)).toEqual(new Set([result]));
    expect(tokens.size).toBeGreaterThan(1);
    expect(await holders(locker(), 'long')).toEqual([]);
  });

  it('aborts the work when a renewal finds the lease gone, and rejects with LeaseLostError', async () => {
    let lostReason: unknown;
    const outcome = withLock(
      locker(),
      target('lost'),
      async ({ signal, leaseToken }) => {
        // Someone (an operator, a sweeper after a pause) removes the lease under the holder.
        await (locker() as LockService).release({ leaseToken: leaseToken() });
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        expect(signal.reason).toBeInstanceOf(LeaseLostError);
        return 'finished anyway';
      },
      { onLost: (reason) => (lostReason = reason) },
    );
    await expect(outcome).rejects.toBeInstanceOf(LeaseLostError);
    expect(lostReason).toBeInstanceOf(LeaseLostError);
  });

  it('releases when the work throws, and passes the error on', async () => {
    await expect(
      withLock(locker(), target('throws', 10_000), async () => {
        expect(await holders(locker(), 'throws')).toHaveLength(1);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await holders(locker(), 'throws')).toEqual([]);
  });

  it('waits longer than its own TTL for a lock held by another, and works on a lease that starts at the grant', async () => {
    const grant = await locker().acquire({ ...target('long-wait', 10_000), owner: 'other' });
    setTimeout(() => void locker().release({ leaseToken: grant.leaseToken }), 1_500);
    const outcome = await withLock(locker(), target('long-wait', 1_000), async ({ signal }) => (signal.aborted ? 'lost' : 'got it'), { waitMs: 5_000 });
    expect(outcome).toBe('got it');
  });

  it('fails at once with LockHeldError when the lock is taken, or waits with waitMs', async () => {
    const grant = await locker().acquire({ ...target('busy', 10_000), owner: 'other' });
    await expect(withLock(locker(), target('busy'), async () => 'never')).rejects.toBeInstanceOf(LockHeldError);
    setTimeout(() => void locker().release({ leaseToken: grant.leaseToken }), 300);
    expect(await withLock(locker(), target('busy'), async () => 'got it', { waitMs: 5_000 })).toBe('got it');
  });
});

describe('withLock, clock and cancellation', () => {
  it('aborts by the local clock when renewals keep failing, after retrying them', async () => {
    let renewCalls = 0;
    let released = false;
    const flaky = {
      acquire: async () => ({ leaseToken: 't', fencingToken: '7', ttlMs: 600 }),
      renew: async () => {
        renewCalls++;
        throw new StoreUnavailableError('down', { operation: 'renew' });
      },
      release: async () => {
        released = true;
        return { outcome: 'expired' };
      },
    } as unknown as Locker;
    const started = performance.now();
    let abortedAfter = 0;
    await expect(
      withLock(flaky, target('flaky'), async ({ signal }) => {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        abortedAfter = performance.now() - started;
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(abortedAfter).toBeGreaterThanOrEqual(550);
    expect(abortedAfter).toBeLessThan(1_000);
    expect(renewCalls).toBeGreaterThanOrEqual(2);
    expect(released).toBe(true);
  });

  it("the caller's own signal aborts the work and releases", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('shutting down')), 200);
    await expect(
      withLock(
        engine,
        target('cancel', 10_000),
        async ({ signal }) => {
          await new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }));
        },
        { signal: controller.signal },
      ),
    ).rejects.toThrow('shutting down');
    expect(await holders(engine, 'cancel')).toEqual([]);
  });

  it('never starts the work when the grant arrives after the lease has run out by the local clock, and releases it', async () => {
    let released = 0;
    let worked = false;
    // A real node answers in milliseconds; this stand-in answers after the 100 ms lease is over (a paused event loop does the same).
    const slow = {
      acquire: async () => {
        await sleep(150);
        return { leaseToken: 't', fencingToken: '7', ttlMs: 100 };
      },
      renew: async () => ({ leaseToken: 't', fencingToken: '7' }),
      release: async () => {
        released++;
        return { outcome: 'expired' };
      },
    } as unknown as Locker;
    await expect(
      withLock(slow, target('slow', 100), async () => {
        worked = true;
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(worked).toBe(false);
    expect(released).toBe(1);
  });

  it("a caller's signal that aborts while the acquire is in flight stops the work from starting, and the grant is released", async () => {
    const controller = new AbortController();
    let worked = false;
    const pending = withLock(
      engine,
      target('cancelled-early', 10_000),
      async () => {
        worked = true;
      },
      { signal: controller.signal },
    );
    controller.abort(new Error('gave up'));
    await expect(pending).rejects.toThrow('gave up');
    expect(worked).toBe(false);
    expect(await holders(engine, 'cancelled-early')).toEqual([]);
  });
});
