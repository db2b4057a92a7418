/**
 * Work that runs once: completion records on the real node. An acquire with an idempotency key
 * answers the recorded result once the work completed; only the lease that took the work on, while
 * it still holds the lock, can record; a record stays until its expiry and no longer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LeaseLostError, ValidationError, WorkInProgressError } from '../../packages/engine/src/errors.js';
import type { CompletedWork, Grant } from '../../packages/engine/src/model.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

let client: SearchClient;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  engine = engineOn(client, await freshLockIndex(client, 'work-once'));
});
afterAll(async () => closeTestClient(client));

const job = (id: string, idempotencyKey: string, owner = 'worker') => ({ namespace: 'jobs', granularity: 'document', ids: [id], owner, idempotencyKey });
const isGrant = (outcome: unknown): outcome is Grant => typeof outcome === 'object' && outcome !== null && 'leaseToken' in outcome;
const completed = (outcome: unknown): CompletedWork => {
  expect(outcome).toMatchObject({ status: 'completed' });
  return outcome as CompletedWork;
};
const heldKeys = async (id: string) => (await engine.inspect({ namespace: 'jobs', granularity: 'document', ids: [id] })).flatMap((state) => state.holders);

/** One delivery of a message: runs the work (counted) under the lock unless it was done, and records its result. */
async function deliver(id: string, key: string, runs: string[], owner: string, waitMs = 0): Promise<unknown> {
  const outcome = await engine.acquireWork({ ...job(id, key, owner), waitMs, ttlMs: 5_000 });
  if (!isGrant(outcome)) return (outcome as CompletedWork).result;
  runs.push(owner);
  await sleep(20);
  const result = { by: owner };
  await engine.release({ leaseToken: outcome.leaseToken, record: { status: 'completed', result } });
  return result;
}

describe('completion records', () => {
  it('answer the recorded result to a redelivery after completion, and hold nothing', async () => {
    const first = await engine.acquireWork({ ...job('j-1', 'msg-1'), ttlMs: 10_000 });
    expect(isGrant(first)).toBe(true);
    const release = await engine.release({ leaseToken: (first as Grant).leaseToken, record: { status: 'completed', result: { rows: 3 } } });
    expect(release).toMatchObject({ outcome: 'released', recorded: 'completed' });

    const again = completed(await engine.acquireWork({ ...job('j-1', 'msg-1', 'redelivery'), ttlMs: 10_000 }));
    expect(again).toMatchObject({ result: { rows: 3 }, owner: 'worker', fencingToken: (first as Grant).fencingToken });
    expect(again.keyHash).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await heldKeys('j-1')).toEqual([]);
    // Another key on the same lock is other work: it runs.
    const other = await engine.acquireWork({ ...job('j-1', 'msg-2'), ttlMs: 10_000 });
    expect(isGrant(other)).toBe(true);
    await engine.release({ leaseToken: (other as Grant).leaseToken });
  });

  it('run the work once among duplicate deliveries racing, and give every one the same result', async () => {
    for (let round = 0; round < 3; round++) {
      const runs: string[] = [];
      const results = await Promise.all(Array.from({ length: 8 }, (_, n) => deliver(`race-${round}`, 'dup', runs, `d${n}`, 10_000)));
      expect(runs).toHaveLength(1);
      expect(results.every((result) => JSON.stringify(result) === JSON.stringify({ by: runs[0] }))).toBe(true);
    }
  });

  it('tell a delivery that does not wait that the work is in progress, without holding anything', async () => {
    const taker = (await engine.acquireWork({ ...job('j-2', 'msg-1', 'taker'), ttlMs: 10_000 })) as Grant;
    const refusal = await engine.acquireWork({ ...job('j-2', 'msg-1', 'duplicate') }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(WorkInProgressError);
    expect((refusal as WorkInProgressError).context).toMatchObject({ owner: 'taker' });
    expect((await heldKeys('j-2')).map((holder) => holder.owner)).toEqual(['taker']);
    await engine.release({ leaseToken: taker.leaseToken, record: { status: 'completed' } });
    expect(completed(await engine.acquireWork(job('j-2', 'msg-1', 'duplicate')))).not.toHaveProperty('result');
  });

  it('never let a redelivery with the same requestId take the work over: it waits for the first, then gets its result', async () => {
    const message = { ...job('j-10', 'unused', 'sqs:m-1'), idempotencyKey: true, requestId: 'sqs:m-1', ttlMs: 10_000 };
    const first = (await engine.acquireWork(message)) as Grant;
    await expect(engine.acquireWork(message)).rejects.toBeInstanceOf(WorkInProgressError);
    const waiting = engine.acquireWork({ ...message, waitMs: 5_000 });
    await sleep(300);
    expect((await heldKeys('j-10')).map((holder) => holder.owner)).toEqual(['sqs:m-1']);
    await engine.release({ leaseToken: first.leaseToken, record: { status: 'completed', result: 'first' } });
    expect(completed(await waiting).result).toBe('first');
    expect(await heldKeys('j-10')).toEqual([]);
  });

  it('let the work run again after a crash between the work and the record', async () => {
    const crashed = (await engine.acquireWork({ ...job('j-3', 'msg-1', 'crashed'), ttlMs: 1_000 })) as Grant;
    await expect(engine.acquireWork(job('j-3', 'msg-1', 'next'))).rejects.toBeInstanceOf(WorkInProgressError);
    await sleep(1_100);
    const next = await engine.acquireWork({ ...job('j-3', 'msg-1', 'next'), ttlMs: 10_000 });
    expect(isGrant(next)).toBe(true);
    expect(BigInt((next as Grant).fencingToken)).toBeGreaterThan(BigInt(crashed.fencingToken));
    await engine.release({ leaseToken: (next as Grant).leaseToken, record: { status: 'completed', result: 'second run' } });
    expect(completed(await engine.acquireWork(job('j-3', 'msg-1', 'third'))).result).toBe('second run');
  });

  it('refuse the record of a holder that was taken over, and keep the one of the holder that took over', async () => {
    const stalled = (await engine.acquireWork({ ...job('j-4', 'msg-1', 'stalled'), ttlMs: 1_000 })) as Grant;
    await sleep(1_100);
    const successor = (await engine.acquireWork({ ...job('j-4', 'msg-1', 'successor'), ttlMs: 10_000 })) as Grant;
    const late = await engine.release({ leaseToken: stalled.leaseToken, record: { status: 'completed', result: 'stale' } }).catch((error: unknown) => error);
    expect(late).toBeInstanceOf(LeaseLostError);
    expect((late as Error).message).toMatch(/not recorded/);
    expect((await heldKeys('j-4')).map((holder) => holder.owner)).toEqual(['successor']);
    await engine.release({ leaseToken: successor.leaseToken, record: { status: 'completed', result: 'fresh' } });
    expect(completed(await engine.acquireWork(job('j-4', 'msg-1'))).result).toBe('fresh');
  });

  it('refuse the record of a holder whose lease ran out even when nobody took over', async () => {
    const slow = (await engine.acquireWork({ ...job('j-5', 'msg-1', 'slow'), ttlMs: 1_000 })) as Grant;
    await sleep(1_100);
    await expect(engine.release({ leaseToken: slow.leaseToken, record: { status: 'completed' } })).rejects.toBeInstanceOf(LeaseLostError);
    expect(isGrant(await engine.acquireWork(job('j-5', 'msg-1')))).toBe(true);
  });

  it('let the next delivery run the work after `failed`', async () => {
    const first = (await engine.acquireWork(job('j-6', 'msg-1'))) as Grant;
    expect(await engine.release({ leaseToken: first.leaseToken, record: { status: 'failed' } })).toMatchObject({ recorded: 'failed' });
    const second = await engine.acquireWork(job('j-6', 'msg-1'));
    expect(isGrant(second)).toBe(true);
    await engine.release({ leaseToken: (second as Grant).leaseToken, record: { status: 'completed', result: 2 } });
    expect(completed(await engine.acquireWork(job('j-6', 'msg-1'))).result).toBe(2);
  });

  it('answer a retried record (its first answer lost) as recorded', async () => {
    const grant = (await engine.acquireWork(job('j-7', 'msg-1'))) as Grant;
    await engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', result: 'once' } });
    expect(await engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', result: 'twice' } })).toMatchObject({ recorded: 'completed' });
    expect(completed(await engine.acquireWork(job('j-7', 'msg-1'))).result).toBe('once');
  });

  it('keep a record until its expiry, through sweeps, and no longer', async () => {
    const grant = (await engine.acquireWork(job('j-8', 'msg-1'))) as Grant;
    await engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', result: 'kept', ttlMs: 1_500 } });
    await engine.sweep();
    expect(completed(await engine.acquireWork(job('j-8', 'msg-1'))).result).toBe('kept');
    await sleep(1_600);
    await client.indices.refresh({ index: '_all' });
    expect((await engine.sweep()).deletedLocks).toBeGreaterThanOrEqual(1);
    expect(isGrant(await engine.acquireWork(job('j-8', 'msg-1')))).toBe(true);
  });

  it('name the key by the requestId when idempotencyKey is true', async () => {
    const first = (await engine.acquireWork({ ...job('j-9', 'unused'), idempotencyKey: true, requestId: 'msg-77' })) as Grant;
    await engine.release({ leaseToken: first.leaseToken, record: { status: 'completed', result: 77 } });
    expect(completed(await engine.acquireWork({ ...job('j-9', 'unused'), idempotencyKey: true, requestId: 'msg-77' })).result).toBe(77);
  });
});

describe('completion records refuse bad input and write nothing', () => {
  const fieldsOf = async (promise: Promise<unknown>) => {
    const error = await promise.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).fields.map(({ field, rule }) => `${field}:${rule}`);
  };

  it('on the acquire', async () => {
    expect(await fieldsOf(engine.acquireWork(job('bad-1', '')))).toContain('idempotencyKey:min');
    expect(await fieldsOf(engine.acquireWork(job('bad-1', 'k'.repeat(513))))).toContain('idempotencyKey:max');
    expect(await fieldsOf(engine.acquireWork({ ...job('bad-1', 'k'), mode: 'shared' }))).toContain('idempotencyKey:exclusive_only');
    expect(await fieldsOf(engine.acquireWork({ ...job('bad-1', 'k'), idempotencyKey: true }))).toContain('idempotencyKey:needs_request_id');
    expect(await fieldsOf(engine.acquireWork({ ...job('bad-1', 'k'), permits: { limit: 3 } }))).toContain('idempotencyKey:not_with_permits');
    expect(await heldKeys('bad-1')).toEqual([]);
  });

  it('on the release: nothing recorded, nothing released', async () => {
    const grant = (await engine.acquireWork(job('bad-2', 'k'))) as Grant;
    const huge = { blob: 'x'.repeat(40_000) };
    expect(await fieldsOf(engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', result: huge } }))).toContain(
      'record.result:too_large',
    );
    expect(await fieldsOf(engine.release({ leaseToken: grant.leaseToken, record: { status: 'done' } }))).toContain('record.status:one_of');
    expect(await fieldsOf(engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', ttlMs: 0 } }))).toContain('record.ttlMs:min');
    expect((await heldKeys('bad-2')).map((holder) => holder.owner)).toEqual(['worker']);
    await engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed' } });

    const plain = await engine.acquire({ namespace: 'jobs', granularity: 'document', ids: ['bad-3'], owner: 'plain' });
    expect(await fieldsOf(engine.release({ leaseToken: plain.leaseToken, record: { status: 'completed' } }))).toContain('record:needs_idempotency_key');
    expect((await heldKeys('bad-3')).map((holder) => holder.owner)).toEqual(['plain']);
    await engine.release({ leaseToken: plain.leaseToken });
  });

  it('a plain acquire does not take an idempotency key', async () => {
    await expect(engine.acquire(job('bad-4', 'k'))).rejects.toBeInstanceOf(ValidationError);
    await expect(
      engine
        .acquire({ namespace: 'jobs', granularity: 'document', ids: ['bad-4'], owner: 'x' })
        .then((grant) => engine.release({ leaseToken: grant.leaseToken })),
    ).resolves.toBeDefined();
  });
});
