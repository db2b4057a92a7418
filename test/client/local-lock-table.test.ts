/**
 * The client package's local lock table in front of the engine, on the real node: callers of one
 * process that want conflicting locks queue in memory, and only the first in line talks to
 * Elasticsearch. The engine is the client's transport in-process (packages/engine/src/locker.ts),
 * so what reaches Elasticsearch can be counted.
 */

import { type AcquireBody, LeaseLostError, LocalLockTable, type Lock, LockClient, LockHeldError, localKeysOf } from '@es-lease-locks/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { engineLocker } from '../../packages/engine/src/locker.js';
import { closeTestClient, freshLockIndex, sleep, testClient } from '../support/engine.js';
import { CountingEngine } from '../support/lock-traffic.js';

let client: SearchClient;
let engine: CountingEngine;

beforeAll(async () => {
  client = testClient();
  engine = new CountingEngine(client, await freshLockIndex(client, 'local-table'));
});
afterAll(async () => {
  await closeTestClient(client);
});
beforeEach(() => engine.reset());

const doc = (ids: string | string[], owner: string, extra: Partial<AcquireBody> = {}): AcquireBody => ({
  namespace: 'llt',
  granularity: 'document',
  ids: Array.isArray(ids) ? ids : [ids],
  owner,
  ttlMs: 5_000,
  ...extra,
});
const tree = (path: string, owner: string, mode: 'exclusive' | 'shared' = 'exclusive'): AcquireBody => ({
  namespace: 'llt',
  granularity: 'tree',
  path,
  owner,
  mode,
  ttlMs: 5_000,
});

/** Runs work under the lock through the client package (`using`), with the callers' shared table when given. */
function withLock<T>(
  request: AcquireBody,
  work: (signal: AbortSignal, lock: Lock) => Promise<T>,
  options: { waitMs?: number; localTable?: LocalLockTable; signal?: AbortSignal } = {},
): Promise<T> {
  const { waitMs, localTable, signal } = options;
  const locks = new LockClient({ transport: engineLocker(engine), ...(localTable ? { localTable } : {}) });
  return locks.using({ ...request, ...(waitMs !== undefined ? { waitMs } : {}) }, work, signal ? { signal } : {});
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

/** Runs withLock and tells when the work has started (the lock is then held in Elasticsearch too). */
function holdUntil(table: LocalLockTable, request: AcquireBody, release: Promise<void>, options: { waitMs?: number; signal?: AbortSignal } = {}) {
  const started = gate();
  const done = withLock(
    request,
    async () => {
      started.open();
      await release;
      return request.owner;
    },
    { ...options, localTable: table },
  );
  return { started: started.opened, done };
}

const refusal = async (promise: Promise<unknown>): Promise<LockHeldError> => {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(LockHeldError);
  return error as LockHeldError;
};

describe('local lock table', () => {
  it('holders of one key queue locally: one acquire at a time reaches Elasticsearch, none is refused, first come first served', async () => {
    const table = new LocalLockTable();
    const order: string[] = [];
    let inside = 0;
    let mostInside = 0;
    const results = await Promise.all(
      ['w0', 'w1', 'w2', 'w3', 'w4'].map((owner) =>
        withLock(
          doc('queue-1', owner),
          async () => {
            inside++;
            mostInside = Math.max(mostInside, inside);
            order.push(owner);
            await sleep(20);
            inside--;
            return owner;
          },
          { waitMs: 5_000, localTable: table },
        ),
      ),
    );
    expect(results).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
    expect(order).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
    expect(mostInside).toBe(1);
    const traffic = engine.traffic();
    expect(traffic).toMatchObject({ acquires: 5, maxAcquiresInFlightPerKey: 1, writeConflicts: 0, acquiresRefused: 0 });
    expect(table.stats()).toEqual({ keys: 0, holders: 0, waiting: 0, entered: 1, queued: 4, refusedFull: 0, timedOut: 0 });
  });

  it('callers of different keys, and shared callers of one key, go through side by side', async () => {
    const table = new LocalLockTable();
    const release = gate();
    const a = holdUntil(table, doc('side-a', 'a'), release.opened);
    const b = holdUntil(table, doc('side-b', 'b'), release.opened);
    const r1 = holdUntil(table, doc('side-r', 'r1', { mode: 'shared' }), release.opened);
    const r2 = holdUntil(table, doc('side-r', 'r2', { mode: 'shared' }), release.opened);
    // All four hold at once: none waits for the gate another one holds closed.
    await Promise.all([a.started, b.started, r1.started, r2.started]);
    expect(table.stats()).toMatchObject({ holders: 4, waiting: 0 });
    release.open();
    expect(await Promise.all([a.done, b.done, r1.done, r2.done])).toEqual(['a', 'b', 'r1', 'r2']);
    // The two readers write the same lock document, so one may have to write again (a write conflict
    // the engine resolves by itself); nobody was refused.
    expect(engine.traffic()).toMatchObject({ acquires: 4, acquiresRefused: 0 });
  });

  it('an exclusive caller waits for the shared holders, and later shared callers wait behind it (no starvation)', async () => {
    const table = new LocalLockTable();
    const order: string[] = [];
    const first = gate();
    const reader = withLock(
      doc('fair', 'reader-1', { mode: 'shared' }),
      async () => {
        order.push('reader-1');
        await first.opened;
      },
      { localTable: table },
    );
    const writer = withLock(doc('fair', 'writer'), async () => void order.push('writer'), { waitMs: 5_000, localTable: table });
    const late = withLock(doc('fair', 'reader-2', { mode: 'shared' }), async () => void order.push('reader-2'), { waitMs: 5_000, localTable: table });
    await sleep(100);
    // reader-2 is compatible with reader-1 but arrived after the writer: it waits.
    expect(order).toEqual(['reader-1']);
    expect(table.stats()).toMatchObject({ holders: 1, waiting: 2 });
    first.open();
    await Promise.all([reader, writer, late]);
    expect(order).toEqual(['reader-1', 'writer', 'reader-2']);
    expect(engine.traffic()).toMatchObject({ acquires: 3, writeConflicts: 0, acquiresRefused: 0 });
  });

  it('a full queue refuses at once, without asking Elasticsearch', async () => {
    const table = new LocalLockTable({ maxQueued: 2 });
    const release = gate();
    const holder = holdUntil(table, doc('full', 'holder'), release.opened);
    await holder.started;
    const queued = [
      holdUntil(table, doc('full', 'q1'), Promise.resolve(), { waitMs: 5_000 }),
      holdUntil(table, doc('full', 'q2'), Promise.resolve(), { waitMs: 5_000 }),
    ];
    const asked = performance.now();
    const error = await refusal(withLock(doc('full', 'one-too-many'), async () => 'no', { waitMs: 5_000, localTable: table }));
    expect(performance.now() - asked).toBeLessThan(50);
    expect(error.message).toContain('full');
    expect(error.conflicts[0]).toMatchObject({ key: 'full', granularity: 'document', requestedMode: 'X', holders: [{ owner: 'holder', mode: 'X' }] });
    expect(engine.traffic().acquires).toBe(1);
    expect(table.stats()).toMatchObject({ holders: 1, waiting: 2, refusedFull: 1 });
    release.open();
    expect(await Promise.all([holder.done, ...queued.map((caller) => caller.done)])).toEqual(['holder', 'q1', 'q2']);
  });

  it('waiters give up after waitMs with the LockHeldError the service gives; a caller that asks for no wait is refused at once', async () => {
    const table = new LocalLockTable();
    const release = gate();
    const holder = holdUntil(table, doc('patience', 'holder'), release.opened);
    await holder.started;

    const asked = performance.now();
    const local = await refusal(withLock(doc('patience', 'waiter'), async () => 'no', { waitMs: 200, localTable: table }));
    expect(performance.now() - asked).toBeGreaterThanOrEqual(195);
    expect(local.waitedMs).toBeGreaterThanOrEqual(195);
    const noWait = await refusal(withLock(doc('patience', 'impatient'), async () => 'no', { localTable: table }));
    expect(noWait.waitedMs).toBe(0);
    // Neither asked Elasticsearch: only the holder's acquire went out.
    expect(engine.traffic().acquires).toBe(1);

    // The service's own refusal of the same request, for comparison: same class, same conflict.
    const remote = await refusal(engineLocker(engine).acquire(doc('patience', 'elsewhere')));
    for (const error of [local, noWait, remote]) {
      expect(error.retryable).toBe(true);
      expect(error.conflicts).toHaveLength(1);
      expect(error.conflicts[0]).toMatchObject({ key: 'patience', granularity: 'document', requestedMode: 'X', holders: [{ owner: 'holder', mode: 'X' }] });
      // The local table knows the holder's lease from its lock handle.
      expect(error.conflicts[0]!.holders[0]!.expiresAtMs).toBeGreaterThan(Date.now());
    }
    release.open();
    await holder.done;
    expect(table.stats()).toMatchObject({ keys: 0, timedOut: 1 });
  });

  it('the wait in the local queue counts against waitMs: the service is given what is left', async () => {
    const table = new LocalLockTable();
    const release = gate();
    const holder = holdUntil(table, doc('budget', 'holder'), release.opened);
    await holder.started;
    const waiter = holdUntil(table, doc('budget', 'waiter'), Promise.resolve(), { waitMs: 1_000 });
    await sleep(300);
    release.open();
    await Promise.all([holder.done, waiter.done]);
    const [, given] = engine.waits;
    expect(given).toBeLessThanOrEqual(700);
    expect(given).toBeGreaterThan(500);
  });

  it('multi-key requests take all or nothing: a waiter holds none of its keys, then all of them at once', async () => {
    const table = new LocalLockTable();
    const release = gate();
    const holder = holdUntil(table, doc('multi-b', 'holder'), release.opened);
    await holder.started;
    let heldDuringWork: string[] = [];
    const both = withLock(
      doc(['multi-a', 'multi-b'], 'both'),
      async () => {
        const states = await engine.inspect({ namespace: 'llt', granularity: 'document', ids: ['multi-a', 'multi-b'] });
        heldDuringWork = states.filter((state) => state.holders.some((h) => h.owner === 'both' && !h.expired)).map((state) => state.key);
      },
      { waitMs: 5_000, localTable: table },
    );
    await sleep(100);
    // Queued for multi-b, it holds multi-a neither here nor in Elasticsearch.
    expect(table.stats()).toMatchObject({ holders: 1, waiting: 1 });
    expect(await engine.inspect({ namespace: 'llt', granularity: 'document', ids: ['multi-a'] })).toEqual([]);
    expect(engine.traffic().acquires).toBe(1);
    release.open();
    await Promise.all([holder.done, both]);
    expect(heldDuringWork.sort()).toEqual(['multi-a', 'multi-b']);
  });

  it('multi-key requests in every order cannot deadlock, and never overlap on a key', async () => {
    const table = new LocalLockTable();
    const keys = ['m-1', 'm-2', 'm-3'];
    const orders = [['m-1', 'm-2'], ['m-2', 'm-1'], ['m-3', 'm-1'], ['m-2', 'm-3'], ['m-3', 'm-2', 'm-1'], ['m-1'], ['m-3'], ['m-1', 'm-3', 'm-2']];
    const inside = new Map(keys.map((key) => [key, 0]));
    let overlaps = 0;
    const callers = Array.from({ length: 24 }, (_, n) => {
      const ids = orders[n % orders.length]!;
      return withLock(
        doc(ids, `multi-${n}`),
        async () => {
          for (const id of ids) inside.set(id, inside.get(id)! + 1);
          if (ids.some((id) => inside.get(id)! > 1)) overlaps++;
          await sleep(5);
          for (const id of ids) inside.set(id, inside.get(id)! - 1);
        },
        { waitMs: 20_000, localTable: table },
      );
    });
    await Promise.all(callers);
    expect(overlaps).toBe(0);
    expect(engine.traffic()).toMatchObject({ acquires: 24, maxAcquiresInFlightPerKey: 1, writeConflicts: 0, acquiresRefused: 0 });
    expect(table.stats()).toMatchObject({ keys: 0, holders: 0, waiting: 0 });
  });

  it('tree locks queue with intention semantics: /a waits for /a/b, other subtrees and readers go through, later ones queue behind /a', async () => {
    expect(localKeysOf(tree('/t/a/b', 'x')).map(({ key, mode }) => `${mode} ${key}`)).toEqual(['X /t/a/b', 'IX /t', 'IX /t/a', 'IX *']);
    const table = new LocalLockTable();
    const order: string[] = [];
    const release = gate();
    const below = holdUntil(table, tree('/t/a/b', 'below'), release.opened);
    await below.started;
    const sibling = holdUntil(table, tree('/t/a/c', 'sibling'), Promise.resolve());
    const reader = holdUntil(table, tree('/t/a/d', 'reader', 'shared'), Promise.resolve());
    expect(await Promise.all([sibling.done, reader.done])).toEqual(['sibling', 'reader']);
    const above = withLock(tree('/t/a', 'above'), async () => void order.push('above'), { waitMs: 5_000, localTable: table });
    // Compatible with /t/a/b, but it came after the writer of /t/a, which it would keep out (IX against X on /t/a).
    const late = withLock(tree('/t/a/e', 'late'), async () => void order.push('late'), { waitMs: 5_000, localTable: table });
    await sleep(50);
    // Neither asked Elasticsearch yet.
    expect(engine.traffic().acquires).toBe(3);
    expect(table.stats()).toMatchObject({ holders: 1, waiting: 2 });
    release.open();
    await Promise.all([below.done, above, late]);
    expect(order).toEqual(['above', 'late']);
    expect(engine.traffic()).toMatchObject({ acquires: 5, acquiresRefused: 0 });
  });

  it('the local slot is given up on every path: work throws, the lease is lost, a queued caller aborts', async () => {
    const table = new LocalLockTable();
    const thrower = withLock(
      doc('paths', 'thrower'),
      async () => {
        await sleep(50);
        throw new Error('work failed');
      },
      { localTable: table },
    );
    const next = withLock(doc('paths', 'next'), async () => 'next', { waitMs: 5_000, localTable: table });
    await expect(thrower).rejects.toThrow('work failed');
    expect(await next).toBe('next');

    // A lease released behind the handle's back: the renewal finds it gone, the signal aborts, the slot is given up.
    const loser = withLock(
      doc('paths', 'loser', { ttlMs: 1_000 }),
      async (signal, lock) => {
        await engine.release({ leaseToken: lock.leaseToken });
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      },
      { localTable: table },
    );
    const after = withLock(doc('paths', 'after-loss'), async () => 'after-loss', { waitMs: 5_000, localTable: table });
    await expect(loser).rejects.toBeInstanceOf(LeaseLostError);
    expect(await after).toBe('after-loss');

    const release = gate();
    const holder = holdUntil(table, doc('paths', 'holder'), release.opened);
    await holder.started;
    const controller = new AbortController();
    const aborted = withLock(doc('paths', 'aborted'), async () => 'no', { waitMs: 5_000, localTable: table, signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    await expect(aborted).rejects.toThrow('caller gave up');
    expect(table.stats()).toMatchObject({ holders: 1, waiting: 0 });
    release.open();
    await holder.done;
    expect(table.stats()).toMatchObject({ keys: 0, holders: 0, waiting: 0 });
  });

  it('the table never grants by itself: a caller of another process (another table) still meets the lock in Elasticsearch', async () => {
    const release = gate();
    const holder = holdUntil(new LocalLockTable(), doc('remote', 'process-1'), release.opened);
    await holder.started;
    const error = await refusal(withLock(doc('remote', 'process-2'), async () => 'no', { localTable: new LocalLockTable() }));
    expect(error.conflicts[0]!.holders[0]!.owner).toBe('process-1');
    expect(engine.traffic()).toMatchObject({ acquires: 2, acquiresRefused: 1 });
    release.open();
    await holder.done;
  });

  it('permits (a semaphore) skip the table: holders of one process share the key up to the limit in Elasticsearch', async () => {
    const table = new LocalLockTable();
    const release = gate();
    const semaphore = (owner: string) => doc('semaphore', owner, { permits: { limit: 2 } });
    const first = holdUntil(table, semaphore('p1'), release.opened);
    const second = holdUntil(table, semaphore('p2'), release.opened);
    await Promise.all([first.started, second.started]);
    expect(table.stats()).toMatchObject({ keys: 0, holders: 0 });
    const full = await refusal(withLock(semaphore('p3'), async () => 'no', { localTable: table }));
    expect(full.conflicts[0]).toMatchObject({ permits: { limit: 2, taken: 2 } });
    release.open();
    expect(await Promise.all([first.done, second.done])).toEqual(['p1', 'p2']);
  });
});
