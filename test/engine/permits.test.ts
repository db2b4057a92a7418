/**
 * Permits (counting semaphores, docs/permits.md), on the real node: a document or tree path acquired
 * with `permits: { limit, count }` holds at most `limit` permits among its live holders; each grant
 * is a lease with its own fencing token, renewed, released and swept like a lock's; waiters queue in
 * order and nobody overtakes the head; the limit is the document's, and a request that does not match
 * it (another limit, or a plain lock) is refused with PermitLimitMismatchError; bad input writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorReply } from '../../functions/runtime/errors.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError, PermitLimitMismatchError, ValidationError } from '../../packages/engine/src/errors.js';
import type { Grant } from '../../packages/engine/src/model.js';
import type { LockService } from '../../packages/engine/src/service.js';
import type { WakeChannel, WakeMessage, WakeNotifier } from '../../packages/engine/src/wake.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

/** Records every message a channel waiter is told. */
class RecordingNotifier implements WakeNotifier {
  readonly told: WakeMessage[] = [];
  async notify(_: WakeChannel, message: WakeMessage): Promise<'delivered'> {
    this.told.push(message);
    return 'delivered';
  }
  async woken(ticket: string, timeoutMs = 5_000): Promise<Extract<WakeMessage, { outcome: 'ready' }>> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const message = this.told.find((entry) => entry.ticket === ticket && entry.outcome === 'ready');
      if (message?.outcome === 'ready') return message;
      if (Date.now() > until) throw new Error(`ticket ${ticket} was never woken`);
      await sleep(20);
    }
  }
}

let client: SearchClient;
let index: string;
let engine: LockService;
let notifier: RecordingNotifier;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'permits');
  notifier = new RecordingNotifier();
  engine = engineOn(client, index, { notifier });
});
afterAll(async () => closeTestClient(client));

const NS = 'permits';
const sem = (id: string, owner: string, limit: number, count = 1, extra: Record<string, unknown> = {}) => ({
  namespace: NS,
  granularity: 'document',
  ids: [id],
  owner,
  permits: { limit, count },
  ...extra,
});
const token = (grant: Grant): bigint => BigInt(grant.fencingToken);
const failure = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );
/** The live holders of a document and their permits, as the primary's realtime read shows them. */
async function liveHolders(id: string, granularity: 'document' | 'tree' = 'document'): Promise<number[]> {
  const target = granularity === 'document' ? { namespace: NS, granularity, ids: [id] } : { namespace: NS, granularity, path: id };
  const states = await engine.inspect(target as never);
  const own = states.find((state) => state.key === id);
  return (own?.holders ?? []).filter((holder) => !holder.expired).map((holder) => holder.permits ?? Number.NaN);
}

describe('a semaphore', () => {
  it('holds at most its limit of live permits under contention; every caller is served in time', async () => {
    const limit = 3;
    let held = 0;
    let most = 0;
    const samples: number[] = [];
    const grants: Grant[] = [];
    const callers = Array.from({ length: 16 }, async (_, caller) => {
      const count = caller % 4 === 0 ? 2 : 1;
      const grant = await engine.acquire(sem('contended', `c${caller}`, limit, count, { ttlMs: 10_000, waitMs: 30_000 }));
      grants.push(grant);
      held += count;
      most = Math.max(most, held);
      expect(held).toBeLessThanOrEqual(limit);
      await sleep(20 + (caller % 5) * 15);
      held -= count;
      expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
    });
    // Meanwhile, the document itself: never more live permits than the limit.
    let running = true;
    const sampler = (async () => {
      while (running) {
        samples.push((await liveHolders('contended')).reduce((sum, permits) => sum + permits, 0));
        await sleep(15);
      }
    })();
    await Promise.all(callers);
    running = false;
    await sampler;
    expect(grants).toHaveLength(16);
    expect(most).toBeGreaterThan(1);
    expect(Math.max(...samples)).toBeLessThanOrEqual(limit);
    expect(samples.some((sum) => sum > 1)).toBe(true);
    // Each grant has its own fencing token; every holder is a lease of its own.
    expect(new Set(grants.map((grant) => grant.fencingToken)).size).toBe(16);
    expect(grants.every((grant) => grant.permits?.limit === limit && grant.keys[0]?.mode === 'X')).toBe(true);
    // The last release deleted the document, and its limit with it.
    expect(await engine.inspect({ namespace: NS, granularity: 'document', ids: ['contended'] })).toEqual([]);
  });

  it('gives each holder its own lease and token: renew keeps it, release frees its permits only', async () => {
    const a = await engine.acquire(sem('leases', 'a', 2, 1, { ttlMs: 10_000 }));
    const b = await engine.acquire(sem('leases', 'b', 2, 1, { ttlMs: 10_000 }));
    expect(token(b)).toBeGreaterThan(token(a));
    const full = await failure(engine.acquire(sem('leases', 'c', 2)));
    expect(full).toBeInstanceOf(LockHeldError);
    expect((full as LockHeldError).conflicts[0]).toMatchObject({ permits: { limit: 2, taken: 2 } });
    expect((full as LockHeldError).message).toContain('2 of 2 permits taken');
    const renewed = await engine.renew({ leaseToken: a.leaseToken, ttlMs: 20_000 });
    expect(renewed.fencingToken).toBe(a.fencingToken);
    const states = await engine.inspect({ namespace: NS, granularity: 'document', ids: ['leases'] });
    expect(states[0]).toMatchObject({ permitLimit: 2 });
    expect(states[0]?.holders.map((holder) => holder.permits)).toEqual([1, 1]);
    expect((await engine.release({ leaseToken: b.leaseToken })).outcome).toBe('released');
    const c = await engine.acquire(sem('leases', 'c', 2));
    expect(token(c)).toBeGreaterThan(token(b));
    for (const grant of [renewed, c]) expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
  });

  it('serves its queue in order: a small request behind a large one waits too, and nobody overtakes the head', async () => {
    const first = await engine.acquire(sem('order', 'first', 3, 3, { ttlMs: 10_000 }));
    const order: string[] = [];
    const waiting = (owner: string, count: number) =>
      engine.acquire(sem('order', owner, 3, count, { ttlMs: 10_000, waitMs: 20_000 })).then((grant) => {
        order.push(owner);
        return grant;
      });
    const w0 = waiting('w0', 2);
    await sleep(150);
    const w1 = waiting('w1', 2);
    await sleep(150);
    const w2 = waiting('w2', 1);
    await sleep(150);
    await engine.release({ leaseToken: first.leaseToken });
    const g0 = await w0;
    // One permit is free, but w1 (2) is at the head: w2 (1), behind it, waits, and so does a caller that does not.
    await sleep(400);
    expect(order).toEqual(['w0']);
    const impatient = await failure(engine.acquire(sem('order', 'impatient', 3, 1)));
    expect(impatient).toBeInstanceOf(LockHeldError);
    expect((impatient as LockHeldError).conflicts[0]?.reason).toBe('queued_waiters');
    await engine.release({ leaseToken: g0.leaseToken });
    const [g1, g2] = await Promise.all([w1, w2]);
    // Both fit together once w0 is gone (2 + 1 = 3): reserved by the same write, each claims with its own (in either order).
    expect(new Set(order.slice(1))).toEqual(new Set(['w1', 'w2']));
    expect(token(g1)).not.toBe(token(g2));
    expect(Math.min(Number(token(g1) - token(g0)), Number(token(g2) - token(g0)))).toBeGreaterThan(0);
    expect((await liveHolders('order')).sort()).toEqual([1, 2]);
    for (const grant of [g1, g2]) await engine.release({ leaseToken: grant.leaseToken });
  });

  it('takes back the permits of a holder that died: the next acquire once its lease ran out, and the sweeper', async () => {
    // Two holders die (their leases run out unreleased): the semaphore is full until then.
    await engine.acquire(sem('dead', 'dies-1', 2, 1, { ttlMs: 1_000 }));
    await engine.acquire(sem('dead', 'dies-2', 2, 1, { ttlMs: 1_000 }));
    expect(await failure(engine.acquire(sem('dead', 'early', 2)))).toBeInstanceOf(LockHeldError);
    const started = Date.now();
    const next = await engine.acquire(sem('dead', 'next', 2, 2, { ttlMs: 10_000, waitMs: 5_000 }));
    expect(Date.now() - started).toBeGreaterThan(500);
    expect(await liveHolders('dead')).toEqual([2]);
    await engine.release({ leaseToken: next.leaseToken });

    // The sweeper: a dead holder's permits are pruned without any acquire.
    await engine.acquire(sem('swept', 'dies', 3, 2, { ttlMs: 1_000 }));
    const alive = await engine.acquire(sem('swept', 'alive', 3, 1, { ttlMs: 30_000 }));
    await sleep(1_000 + 50 + 1_200);
    const report = await engine.sweep();
    expect(report.prunedHolders).toBeGreaterThanOrEqual(1);
    const states = await engine.inspect({ namespace: NS, granularity: 'document', ids: ['swept'] });
    expect(states[0]?.holders.map((holder) => holder.permits)).toEqual([1]);
    await engine.release({ leaseToken: alive.leaseToken });

    // A dead holder alone is swept with its document, and the limit goes with it.
    await engine.acquire(sem('gone', 'dies', 4, 1, { ttlMs: 1_000 }));
    await sleep(1_000 + 50 + 1_200);
    expect((await engine.sweep()).deletedLocks).toBeGreaterThanOrEqual(1);
    const other = await engine.acquire(sem('gone', 'new-limit', 7));
    expect(other.permits).toEqual({ limit: 7, count: 1 });
    await engine.release({ leaseToken: other.leaseToken });
  });

  it('hands a sweep or a release over to channel waiters with their permits, who claim with the same acquire', async () => {
    const holder = await engine.acquire(sem('wake', 'holder', 2, 2, { ttlMs: 10_000 }));
    const call = sem('wake', 'pipeline', 2, 1, { ttlMs: 10_000, requestId: 'request-wake' });
    const queued = (await engine.acquireOrQueue({ ...call, wake: { taskToken: 'token-wake' } })) as { status: string; ticket: string };
    expect(queued.status).toBe('queued');
    await engine.release({ leaseToken: holder.leaseToken });
    const ready = await notifier.woken(queued.ticket);
    expect(ready.permits).toEqual({ limit: 2, count: 1 });
    const grant = await engine.acquire(call);
    expect(grant.waitedMs).toBeGreaterThan(0);
    expect(grant.permits).toEqual({ limit: 2, count: 1 });
    await engine.release({ leaseToken: grant.leaseToken });
  });
});

describe('the limit belongs to the document', () => {
  it('a permits acquire with another limit, a plain lock on a semaphore, permits on a plain lock: 409 PermitLimitMismatchError naming both', async () => {
    const held = await engine.acquire(sem('mismatch', 'a', 3));
    const other = await failure(engine.acquire(sem('mismatch', 'b', 5, 1, { waitMs: 2_000 })));
    expect(other).toBeInstanceOf(PermitLimitMismatchError);
    expect(other).toMatchObject({ key: 'mismatch', requestedLimit: 5, heldLimit: 3, retryable: false });
    expect((other as Error).message).toMatch(/limit of 3 permits.*limit of 5/);
    const reply = errorReply(other);
    expect(reply.statusCode).toBe(409);
    expect(reply.body).toMatchObject({ error: 'PermitLimitMismatchError', key: 'mismatch', requestedLimit: 5, heldLimit: 3 });

    const plain = await failure(engine.acquire({ namespace: NS, granularity: 'document', ids: ['mismatch'], owner: 'plain' }));
    expect(plain).toMatchObject({ name: 'PermitLimitMismatchError', requestedLimit: null, heldLimit: 3 });
    expect((plain as Error).message).toContain('a plain lock');

    const lock = await engine.acquire({ namespace: NS, granularity: 'document', ids: ['plain-lock'], owner: 'plain' });
    const onLock = await failure(engine.acquire(sem('plain-lock', 'b', 2)));
    expect(onLock).toMatchObject({ name: 'PermitLimitMismatchError', requestedLimit: 2, heldLimit: null });
    expect((onLock as Error).message).toContain('held as a plain lock');
    await engine.release({ leaseToken: lock.leaseToken });

    // Once nobody holds or waits, the document (and its limit) is gone: another limit is fine.
    await engine.release({ leaseToken: held.leaseToken });
    const fresh = await engine.acquire(sem('mismatch', 'b', 5));
    expect(fresh.permits).toEqual({ limit: 5, count: 1 });
    await engine.release({ leaseToken: fresh.leaseToken });
  });
});

describe('what is above and below a semaphore meets each holder as an exclusive lock', () => {
  it('a global exclusive lock of the namespace excludes permit holders, and the other way round', async () => {
    const permit = await engine.acquire({ ...sem('global', 'p', 5), namespace: 'permits-global' });
    const global = await failure(engine.acquire({ namespace: 'permits-global', granularity: 'global', owner: 'g' }));
    expect(global).toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: permit.leaseToken });
    const held = await engine.acquire({ namespace: 'permits-global', granularity: 'global', owner: 'g' });
    expect(await failure(engine.acquire({ ...sem('global', 'p', 5), namespace: 'permits-global' }))).toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: held.leaseToken });
  });

  it('a tree semaphore: an ancestor exclusive lock excludes it, its holders exclude locks below', async () => {
    const path = (p: string, owner: string, extra: Record<string, unknown> = {}) => ({ namespace: NS, granularity: 'tree', path: p, owner, ...extra });
    const a = await engine.acquire(path('/jobs/reindex', 'a', { permits: { limit: 2 } }));
    const b = await engine.acquire(path('/jobs/reindex', 'b', { permits: { limit: 2 } }));
    expect(await liveHolders('/jobs/reindex', 'tree')).toEqual([1, 1]);
    expect(await failure(engine.acquire(path('/jobs/reindex/x', 'below')))).toBeInstanceOf(LockHeldError);
    expect(await failure(engine.acquire(path('/jobs', 'above')))).toBeInstanceOf(LockHeldError);
    for (const grant of [a, b]) await engine.release({ leaseToken: grant.leaseToken });
    const above = await engine.acquire(path('/jobs', 'above'));
    expect(await failure(engine.acquire(path('/jobs/reindex', 'c', { permits: { limit: 2 } })))).toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: above.leaseToken });
    const c = await engine.acquire(path('/jobs/reindex', 'c', { permits: { limit: 2 } }));
    await engine.release({ leaseToken: c.leaseToken });
  });
});

describe('bad permits input', () => {
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['limit 0', sem('bad', 'x', 0), 'permits.limit', 'min'],
    ['limit above the maximum', sem('bad', 'x', 1_001), 'permits.limit', 'max'],
    ['fractional limit', sem('bad', 'x', 2.5), 'permits.limit', 'type'],
    ['missing limit', { ...sem('bad', 'x', 1), permits: { count: 1 } }, 'permits.limit', 'required'],
    ['count above the limit', sem('bad', 'x', 2, 3), 'permits.count', 'more_than_limit'],
    ['count 0', sem('bad', 'x', 2, 0), 'permits.count', 'min'],
    ['unknown permits field', { ...sem('bad', 'x', 2), permits: { limit: 2, size: 1 } }, 'permits.size', 'unknown_field'],
    ['shared mode', sem('bad', 'x', 2, 1, { mode: 'shared' }), 'mode', 'not_with_permits'],
    ['several ids', { ...sem('bad', 'x', 2), ids: ['bad', 'worse'] }, 'permits', 'single_key'],
    ['a global target', { namespace: NS, granularity: 'global', owner: 'x', permits: { limit: 2 } }, 'permits', 'not_for_global'],
  ];

  it.each(cases)('%s is refused, naming the field and the rule', async (_, body, field, rule) => {
    const error = (await failure(engine.acquire(body))) as ValidationError;
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.fields).toContainEqual(expect.objectContaining({ field, rule }));
  });

  it('a refused limit is the only issue: the count is not judged against it', async () => {
    const error = (await failure(engine.acquire(sem('bad', 'x', 0, 1)))) as ValidationError;
    expect(error.fields.map((issue) => `${issue.field}:${issue.rule}`)).toEqual(['permits.limit:min']);
  });

  it('writes nothing', async () => {
    const fresh = await freshLockIndex(client, 'permits-bad');
    const other = engineOn(client, fresh);
    for (const [, body] of cases) expect(await failure(other.acquire(body))).toBeInstanceOf(ValidationError);
    await client.indices.refresh({ index: fresh });
    expect((await client.count({ index: fresh })).count).toBe(0);
  });
});
