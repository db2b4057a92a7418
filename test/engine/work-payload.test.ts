/**
 * Work that runs once, as Powertools users expect it, on the real node: a redelivery of a key with
 * another payload is refused (WorkPayloadMismatchError) and writes nothing, and the key and the
 * payload may be taken from the event, the service computing them as the client does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLockService } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { payloadHashOf } from '../../packages/client/src/wire/event-path.js';
import { LeaseLostError, ValidationError, WorkInProgressError, WorkPayloadMismatchError } from '../../packages/engine/src/errors.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import type { CompletedWork, Grant } from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { LockStore } from '../../packages/engine/src/store.js';
import { workDocId, workKeyHash } from '../../packages/engine/src/work.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, TEST_SKEW_MS, testClient } from '../support/engine.js';

let client: SearchClient;
let index: string;
let engine: LockService;
let store: LockStore;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'work-payload');
  engine = engineOn(client, index);
  store = createLockService({ client, index }).store;
});
afterAll(async () => closeTestClient(client));

const target = (id: string) => ({ namespace: 'orders', granularity: 'document' as const, ids: [id] });
const job = (id: string, key: string, payload: unknown, owner = 'worker') => ({
  ...target(id),
  owner,
  ttlMs: 5_000,
  idempotencyKey: key,
  payloadHash: payloadHashOf(payload)!,
});
const isGrant = (outcome: unknown): outcome is Grant => typeof outcome === 'object' && outcome !== null && 'leaseToken' in outcome;
const heldBy = async (id: string) =>
  (await engine.inspect({ ...target(id), granularity: 'document' })).flatMap((state) =>
    state.holders.filter((holder) => !holder.expired).map((holder) => holder.owner),
  );
/** The work document as the primary has it (its version tells whether anything was written). */
const workDoc = async (id: string, key: string) => {
  const docId = workDocId('orders', workKeyHash({ namespace: 'orders', granularity: 'document', ids: [id] }, key));
  return (await store.readPrimary([docId])).get(docId) ?? null;
};
const refusal = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (outcome) => outcome,
    (error: unknown) => error,
  );

const lockDoc = async (id: string) => {
  const docId = lockDocId('orders', 'document', id);
  return (await store.readPrimary([docId])).get(docId) ?? null;
};

async function complete(id: string, key: string, payload: unknown, result: unknown): Promise<Grant> {
  const grant = (await engine.acquireWork(job(id, key, payload))) as Grant;
  expect(isGrant(grant)).toBe(true);
  await engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', result } });
  return grant;
}

describe('a redelivery with another payload', () => {
  it('after completion: WorkPayloadMismatchError, not the first payload result; nothing written, nothing held', async () => {
    await complete('p-1', 'msg-1', { amount: 10 }, { charged: 10 });
    const before = await workDoc('p-1', 'msg-1');
    const lockBefore = await lockDoc('p-1');
    const error = await refusal(engine.acquireWork(job('p-1', 'msg-1', { amount: 99 }, 'redelivery')));
    expect(error).toBeInstanceOf(WorkPayloadMismatchError);
    expect((error as WorkPayloadMismatchError).context).toMatchObject({ found: 'completed', storedPayloadHash: payloadHashOf({ amount: 10 }) });
    expect((error as WorkPayloadMismatchError).toWire()).toMatchObject({
      error: 'WorkPayloadMismatchError',
      retryable: false,
      found: 'completed',
      storedPayloadHash: payloadHashOf({ amount: 10 })!.slice(0, 8),
      payloadHash: payloadHashOf({ amount: 99 })!.slice(0, 8),
    });
    expect(JSON.stringify((error as WorkPayloadMismatchError).toWire())).not.toContain('charged');
    expect(await heldBy('p-1')).toEqual([]);
    expect((await workDoc('p-1', 'msg-1'))?.seqNo).toBe(before?.seqNo);
    // Refused on the work document as read, before the lock: the lock's document is as it was (no grant given back, no queue joined).
    expect((await lockDoc('p-1'))?.seqNo).toBe(lockBefore?.seqNo);
    // The same payload, however its fields are ordered, gets the result.
    const again = (await engine.acquireWork(job('p-1', 'msg-1', { amount: 10 }))) as CompletedWork;
    expect(again).toMatchObject({ status: 'completed', result: { charged: 10 } });
  });

  it('while another delivery has the work: WorkPayloadMismatchError, not WorkInProgressError; the same payload hears WorkInProgressError', async () => {
    const taker = (await engine.acquireWork(job('p-2', 'msg-1', { amount: 1 }, 'taker'))) as Grant;
    const lockBefore = await lockDoc('p-2');
    const other = await refusal(engine.acquireWork({ ...job('p-2', 'msg-1', { amount: 2 }, 'other'), waitMs: 2_000 }));
    expect(other).toBeInstanceOf(WorkPayloadMismatchError);
    expect((other as WorkPayloadMismatchError).found).toBe('in_progress');
    // It did not wait in the lock's queue for a work it may not take.
    expect((await lockDoc('p-2'))?.seqNo).toBe(lockBefore?.seqNo);
    expect(await refusal(engine.acquireWork(job('p-2', 'msg-1', { amount: 1 }, 'same')))).toBeInstanceOf(WorkInProgressError);
    expect(await heldBy('p-2')).toEqual(['taker']);
    await engine.release({ leaseToken: taker.leaseToken, record: { status: 'completed', result: 'one' } });
  });

  it('after `failed`: runs, with the new payload (a failed record is replaced, as Powertools deletes it)', async () => {
    const first = (await engine.acquireWork(job('p-3', 'msg-1', 'first'))) as Grant;
    await engine.release({ leaseToken: first.leaseToken, record: { status: 'failed' } });
    await complete('p-3', 'msg-1', 'second', 'done by second');
    expect(await refusal(engine.acquireWork(job('p-3', 'msg-1', 'first')))).toBeInstanceOf(WorkPayloadMismatchError);
    expect(await engine.acquireWork(job('p-3', 'msg-1', 'second'))).toMatchObject({ result: 'done by second' });
  });

  it('after the taker died (its lease ran out, no record): taken over with the new payload once the lease ends', async () => {
    const dead = (await engine.acquireWork({ ...job('p-4', 'msg-1', 'old'), ttlMs: 1_000 })) as Grant;
    expect(await refusal(engine.acquireWork(job('p-4', 'msg-1', 'new')))).toBeInstanceOf(WorkPayloadMismatchError);
    await sleep(1_000 + TEST_SKEW_MS + 100);
    const next = (await engine.acquireWork(job('p-4', 'msg-1', 'new', 'next'))) as Grant;
    expect(isGrant(next)).toBe(true);
    expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(dead.fencingToken));
    await expect(engine.release({ leaseToken: dead.leaseToken, record: { status: 'completed', result: 'late' } })).rejects.toBeInstanceOf(LeaseLostError);
    await engine.release({ leaseToken: next.leaseToken, record: { status: 'completed', result: 'new' } });
    expect((await workDoc('p-4', 'msg-1'))?.body.work?.payloadHash).toBe(payloadHashOf('new'));
  });

  it('a side without a hash matches any payload (callers and records from before hashes)', async () => {
    const plain = (await engine.acquireWork({ ...target('p-5'), owner: 'old-caller', idempotencyKey: 'msg-1' })) as Grant;
    await engine.release({ leaseToken: plain.leaseToken, record: { status: 'completed', result: 'unhashed' } });
    expect(await engine.acquireWork(job('p-5', 'msg-1', { any: 'payload' }))).toMatchObject({ result: 'unhashed' });
    await complete('p-6', 'msg-1', 'hashed', 'kept');
    expect(await engine.acquireWork({ ...target('p-6'), owner: 'old-caller', idempotencyKey: 'msg-1' })).toMatchObject({ result: 'kept' });
  });

  it('found only after the grant (completed between the read and the claim): the grant is given back, nothing held', async () => {
    // A chosen interleaving the real node cannot produce on demand: this delivery's read of the work
    // document is answered as before the other delivery ran (then the other runs to completion).
    let staged = false;
    const late: LockStore = Object.create(store, {
      readPrimary: {
        value: async (docIds: readonly string[]) => {
          const read = await store.readPrimary(docIds);
          if (!staged && docIds.some((docId) => docId.includes('|w|'))) {
            staged = true;
            await complete('p-7', 'msg-1', 'theirs', 'their result');
          }
          return read;
        },
      },
    });
    const racing = new LockService(late, { maxClockSkewMs: TEST_SKEW_MS });
    const error = await refusal(racing.acquireWork(job('p-7', 'msg-1', 'mine', 'racer')));
    expect(staged).toBe(true);
    expect(error).toBeInstanceOf(WorkPayloadMismatchError);
    expect((error as WorkPayloadMismatchError).found).toBe('completed');
    expect(await heldBy('p-7')).toEqual([]);
    expect(await engine.acquireWork(job('p-7', 'msg-1', 'theirs'))).toMatchObject({ result: 'their result' });
  });
});

describe('the key and the payload taken from the event', () => {
  const order = (orderId: string | undefined, amount: number, time: string) => ({
    id: `evt-${time}`,
    'detail-type': 'OrderPlaced',
    time,
    detail: { ...(orderId !== undefined ? { orderId } : {}), amount },
  });

  it('name the same work as the key and the hash the client sends', async () => {
    const event = order('o-1', 5, '12:00');
    const grant = (await engine.acquireWork({ ...target('e-1'), owner: 'from-event', event, eventKeyPath: 'detail.orderId', payloadPath: 'detail' })) as Grant;
    expect(isGrant(grant)).toBe(true);
    await engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', result: 'shipped' } });
    // The client's form of the same call: the key itself and the hash of the same part.
    expect(await engine.acquireWork(job('e-1', 'o-1', { amount: 5, orderId: 'o-1' }))).toMatchObject({ result: 'shipped' });
    // A redelivery whose envelope differs (another time) but whose detail is the same: the result.
    const redelivery = { ...target('e-1'), owner: 'again', event: order('o-1', 5, '12:05'), eventKeyPath: 'detail.orderId', payloadPath: 'detail' };
    expect(await engine.acquireWork(redelivery)).toMatchObject({ result: 'shipped' });
    const changed = { ...redelivery, event: order('o-1', 6, '12:06') };
    expect(await refusal(engine.acquireWork(changed))).toBeInstanceOf(WorkPayloadMismatchError);
    expect(await heldBy('e-1')).toEqual([]);
  });

  it('no key in the event: the lock alone, and the grant says so; with throwOnNoKey, ValidationError naming the path and nothing held', async () => {
    const event = order(undefined, 5, '13:00');
    const grant = (await engine.acquireWork({ ...target('e-2'), owner: 'keyless', event, eventKeyPath: 'detail.orderId' })) as Grant;
    expect(grant).toMatchObject({ missingKeyPath: 'detail.orderId', owner: 'keyless' });
    await expect(engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed' } })).rejects.toBeInstanceOf(ValidationError);
    await engine.release({ leaseToken: grant.leaseToken });
    const error = await refusal(engine.acquireWork({ ...target('e-2'), owner: 'strict', event, eventKeyPath: 'detail.orderId', throwOnNoKey: true }));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toEqual([expect.objectContaining({ field: 'eventKeyPath', rule: 'no_key' })]);
    expect((error as ValidationError).message).toContain('detail.orderId');
    expect(await heldBy('e-2')).toEqual([]);
  });
});

describe('bad input is refused, naming the field and the rule, and nothing is written', () => {
  const rulesOf = async (input: Record<string, unknown>): Promise<string[]> => {
    const error = await refusal(engine.acquireWork({ ...target('bad'), owner: 'bad', ...input }));
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).fields.map(({ field, rule }) => `${field}:${rule}`);
  };

  it('on the payload hash and the event fields', async () => {
    expect(await rulesOf({ idempotencyKey: 'k', payloadHash: 'not a hash!' })).toContain('payloadHash:format');
    expect(await rulesOf({ idempotencyKey: 'k', payloadHash: 'a'.repeat(129) })).toContain('payloadHash:format');
    expect(await rulesOf({ payloadHash: 'abc' })).toContain('payloadHash:needs_idempotency_key');
    expect(await rulesOf({ event: {}, eventKeyPath: 'id', payloadHash: 'abc' })).toContain('payloadHash:not_with_event');
    expect(await rulesOf({ event: { id: 'x' }, eventKeyPath: 'id', idempotencyKey: 'k' })).toContain('idempotencyKey:not_with_event');
    expect(await rulesOf({ event: { id: 'x' } })).toContain('event:needs_event_key_path');
    expect(await rulesOf({ eventKeyPath: 'id' })).toContain('eventKeyPath:needs_event');
    expect(await rulesOf({ idempotencyKey: 'k', payloadPath: 'detail', throwOnNoKey: true })).toEqual(
      expect.arrayContaining(['payloadPath:needs_event', 'throwOnNoKey:needs_event']),
    );
    expect(await rulesOf({ event: { id: 'x' }, eventKeyPath: 'id', mode: 'shared' })).toContain('eventKeyPath:exclusive_only');
    expect(await rulesOf({ event: { id: 'x'.repeat(300_000) }, eventKeyPath: 'id' })).toContain('event:too_large');
    expect(await rulesOf({ event: { id: 'x' }, eventKeyPath: 'a..b' })).toContain('eventKeyPath:path');
    expect(await rulesOf({ event: { id: { nested: 1 } }, eventKeyPath: 'id' })).toContain('eventKeyPath:not_a_key');
    expect(await rulesOf({ event: { id: 'k'.repeat(513) }, eventKeyPath: 'id' })).toContain('eventKeyPath:max');
    expect(await rulesOf({ event: { id: 'x' }, eventKeyPath: 'id', payloadPath: 'detail' })).toContain('payloadPath:not_found');
    expect(await heldBy('bad')).toEqual([]);
  });
});

describe('where Powertools users hit trouble (docs/work-once.md)', () => {
  it('a result past the size limit: the record is refused by name, nothing recorded or released; the holder records a reference instead', async () => {
    const grant = (await engine.acquireWork(job('t-1', 'msg-1', 'big'))) as Grant;
    const error = await refusal(engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', result: 'x'.repeat(40_000) } }));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toEqual([expect.objectContaining({ field: 'record.result', rule: 'too_large' })]);
    // Nothing recorded: a redelivery meanwhile is told the work is in progress, never a result.
    expect(await heldBy('t-1')).toEqual(['worker']);
    expect(await refusal(engine.acquireWork(job('t-1', 'msg-1', 'big', 'redelivery')))).toBeInstanceOf(WorkInProgressError);
    await engine.release({ leaseToken: grant.leaseToken, record: { status: 'completed', result: { s3: 's3://results/msg-1.json' } } });
    expect(await engine.acquireWork(job('t-1', 'msg-1', 'big'))).toMatchObject({ result: { s3: 's3://results/msg-1.json' } });
  });
});
