/**
 * The bounds of a lock's queue through the functions behind API Gateway (QUEUE_MAX_TICKETS=2 here):
 * a full queue answers 429 QueueFullError with Retry-After, a ticket lease or a wake channel past
 * its bound answers 400 naming the field and the rule; none of them writes anything. Every answer is
 * checked against the OpenAPI document.
 */
import { describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import { planKeys } from '../../packages/engine/src/keys.js';
import type { StoredLock } from '../../packages/engine/src/store.js';
import { contractProblems, fromProxyResult, type ResponseLike } from '../support/contract.js';
import { sleep } from '../support/engine.js';
import { functionsUnderTest } from '../support/functions.js';
import { httpEvent, lambdaContext } from '../support/lambda-events.js';

const { index, handlers, client } = await functionsUnderTest({ label: 'queue-bounds', env: { QUEUE_MAX_TICKETS: '2' } });
const store = new ElasticsearchLockStore(client, index);

/** POST /acquire or /release through its handler, the answer checked against the OpenAPI document. */
async function post(path: '/acquire' | '/release', body: Record<string, unknown>): Promise<ResponseLike & { body: any; headers: Record<string, string> }> {
  const name = path === '/acquire' ? 'acquire' : 'release';
  const response = fromProxyResult(await handlers[name](httpEvent('POST', path, { body }), lambdaContext(name)));
  expect(contractProblems('POST', path, response), `POST ${path} -> ${response.statusCode} ${JSON.stringify(response.body)}`).toEqual([]);
  return response as ResponseLike & { body: any; headers: Record<string, string> };
}

const doc = (id: string, owner: string, extra: Record<string, unknown> = {}) => ({ namespace: 'orders', granularity: 'document', ids: [id], owner, ...extra });
const docIdOf = (id: string): string => planKeys({ namespace: 'orders', granularity: 'document', ids: [id] }, 'exclusive')[0]!.docId;
const readDocument = async (id: string): Promise<StoredLock | null> => (await store.readPrimary([docIdOf(id)])).get(docIdOf(id)) ?? null;

async function untilQueued(id: string, tickets: number): Promise<StoredLock> {
  for (const until = Date.now() + 5_000; Date.now() < until; await sleep(25)) {
    const lock = await readDocument(id);
    if (lock && (lock.body.queue?.length ?? 0) >= tickets) return lock;
  }
  throw new Error(`the queue of ${id} never reached ${tickets} tickets`);
}

describe('POST /acquire past the queue bounds', () => {
  it('a full queue: 429 QueueFullError naming the lock and the limit, with Retry-After; nothing written; the waiters already queued are served', async () => {
    const holder = await post('/acquire', doc('q-full', 'holder', { ttlMs: 10_000 }));
    expect(holder.statusCode).toBe(200);
    // One after the other, so that they are served in this order.
    const first = post('/acquire', doc('q-full', 'first', { ttlMs: 10_000, waitMs: 8_000 }));
    await untilQueued('q-full', 1);
    const second = post('/acquire', doc('q-full', 'second', { ttlMs: 10_000, waitMs: 8_000 }));
    const before = await untilQueued('q-full', 2);
    const refused = await post('/acquire', doc('q-full', 'third', { waitMs: 8_000 }));
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toMatchObject({ error: 'QueueFullError', retryable: true, key: 'q-full', limit: 2, queued: 2 });
    expect(refused.body.message).toContain('queue.maxTickets');
    expect(refused.headers['Retry-After']).toMatch(/^[1-9][0-9]*$/);
    const after = await readDocument('q-full');
    expect([after?.seqNo, after?.primaryTerm]).toEqual([before.seqNo, before.primaryTerm]);
    expect(after?.body.queue?.map((ticket) => ticket.owner)).toEqual(['first', 'second']);
    await post('/release', { leaseToken: holder.body.leaseToken });
    // Released in turn, each one's release reserves the lock for the next.
    for (const waiter of [first, second]) {
      const granted = await waiter;
      expect(granted.statusCode).toBe(200);
      await post('/release', { leaseToken: granted.body.leaseToken });
    }
  });

  it('a wake channel above QUEUE_WAKE_BYTES: 400 naming wake.taskToken, rule too_large; nothing written', async () => {
    const refused = await post('/acquire', doc('q-wake', 'pipeline', { requestId: 'r-wake', wake: { taskToken: 't'.repeat(2_049) } }));
    expect(refused.statusCode).toBe(400);
    expect(refused.body.fields).toEqual([
      { field: 'wake.taskToken', rule: 'too_large', message: 'is 2049 bytes (UTF-8), above the 2048 a wake channel may take (queue.wakeBytes)' },
    ]);
    expect(await readDocument('q-wake')).toBeNull();
  });

  it('a queueTtlMs above the longest a ticket may wait: 400 naming queueTtlMs, rule max; nothing written', async () => {
    const refused = await post('/acquire', doc('q-ttl', 'pipeline', { requestId: 'r-ttl', wake: { taskToken: 'token' }, queueTtlMs: 86_400_001 }));
    expect(refused.statusCode).toBe(400);
    expect(refused.body.fields).toEqual([{ field: 'queueTtlMs', rule: 'max', message: 'must be at most 86400000 ms (queue.ticketTtlMs.maxMs)' }]);
    expect(await readDocument('q-ttl')).toBeNull();
  });
});
