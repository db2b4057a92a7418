/**
 * The functions behind API Gateway: realistic HTTP API (2.0) events in, proxy results out, every
 * answer checked against the OpenAPI document.
 */
import { describe, expect, it } from 'vitest';
import { deleteLockIndex } from '../../functions/store/index.js';
import { payloadHashOf } from '../../packages/client/src/wire/event-path.js';
import { contractProblems, fromProxyResult, type ResponseLike, requestProblems } from '../support/contract.js';
import { sleep } from '../support/engine.js';
import { functionsUnderTest, type Handlers } from '../support/functions.js';
import { type HttpEventOptions, httpEvent, lambdaContext, scheduleEvent } from '../support/lambda-events.js';

const { index, handlers, client } = await functionsUnderTest({ label: 'http', env: { LOCK_TOKEN_SIGNING_KEY: Buffer.alloc(32, 3).toString('base64') } });

const ROUTE: Record<string, [keyof Handlers, 'GET' | 'POST']> = {
  '/acquire': ['acquire', 'POST'],
  '/renew': ['renew', 'POST'],
  '/release': ['release', 'POST'],
  '/inspect': ['inspect', 'GET'],
  '/locks': ['list', 'GET'],
  '/health': ['health', 'GET'],
};

/** Calls the route's handler with an HTTP API event and checks the answer against the OpenAPI document. */
async function call(path: keyof typeof ROUTE & string, options: HttpEventOptions = {}): Promise<ResponseLike & { body: any }> {
  const [name, method] = ROUTE[path]!;
  const event = httpEvent(method, path, options);
  const response = fromProxyResult(await handlers[name](event, lambdaContext(name)));
  expect(contractProblems(method, path, response), `${method} ${path} -> ${response.statusCode} ${JSON.stringify(response.body)}`).toEqual([]);
  expect((response.headers as Record<string, string>)['x-correlation-id']).toBe(event.requestContext.requestId);
  // What the functions accept, the document accepts too (and the other way round for what they refuse as invalid).
  if (method === 'POST' && options.body !== undefined && response.statusCode !== 400) expect(requestProblems(method, path, options.body)).toEqual([]);
  return response as ResponseLike & { body: any };
}

const doc = (id: string, owner = 'alice', extra: Record<string, unknown> = {}) => ({
  namespace: 'orders',
  granularity: 'document',
  ids: [id],
  owner,
  ...extra,
});

describe('work that runs once (idempotencyKey, record)', () => {
  it('takes the work on, records it on release, then answers 200 completed with the result; a duplicate meanwhile hears 409 WorkInProgressError', async () => {
    const work = doc('h-once', 'alice', { idempotencyKey: 'message-1', ttlMs: 5_000 });
    const taken = await call('/acquire', { body: work });
    expect(taken.statusCode).toBe(200);
    const duplicate = await call('/acquire', { body: { ...work, owner: 'bob' } });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.body).toMatchObject({ error: 'WorkInProgressError', owner: 'alice', retryable: true });
    expect((duplicate.headers as Record<string, string>)['Retry-After']).toBeDefined();
    const released = await call('/release', { body: { leaseToken: taken.body.leaseToken, record: { status: 'completed', result: { rows: 2 } } } });
    expect(released.body).toMatchObject({ outcome: 'released', recorded: 'completed' });
    const again = await call('/acquire', { body: { ...work, owner: 'bob' } });
    expect(again.statusCode).toBe(200);
    expect(again.body).toMatchObject({ status: 'completed', result: { rows: 2 }, owner: 'alice', fencingToken: taken.body.fencingToken });
    // The key's hash names the work; the key itself is in no answer.
    expect(JSON.stringify(again.body)).not.toContain('message-1');
  });

  it('refuses a record that is too large (400, naming the field and rule) and one of a lost lease (410, not recorded)', async () => {
    const taken = await call('/acquire', { body: doc('h-once-2', 'alice', { idempotencyKey: 'message-2', ttlMs: 1_000 }) });
    const huge = await call('/release', { body: { leaseToken: taken.body.leaseToken, record: { status: 'completed', result: 'x'.repeat(40_000) } } });
    expect(huge.statusCode).toBe(400);
    expect(huge.body.fields).toContainEqual(expect.objectContaining({ field: 'record.result', rule: 'too_large' }));
    await sleep(1_100);
    const late = await call('/release', { body: { leaseToken: taken.body.leaseToken, record: { status: 'completed' } } });
    expect(late.statusCode).toBe(410);
    expect(late.body).toMatchObject({ error: 'LeaseLostError' });
  });
});

describe('work that runs once for one payload (payloadHash, or the event itself)', () => {
  const order = (orderId: string | undefined, amount: number) => ({ id: `evt-${amount}`, detail: { ...(orderId ? { orderId } : {}), amount } });

  it('a redelivery of the key with another payload hears 422 WorkPayloadMismatchError, not the result; nothing held', async () => {
    const work = doc('h-payload', 'alice', { idempotencyKey: 'message-3', payloadHash: 'A'.repeat(43), ttlMs: 5_000 });
    const taken = await call('/acquire', { body: work });
    const other = await call('/acquire', { body: { ...work, owner: 'bob', payloadHash: 'B'.repeat(43) } });
    expect(other.statusCode).toBe(422);
    expect(other.body).toMatchObject({ error: 'WorkPayloadMismatchError', retryable: false, found: 'in_progress', storedPayloadHash: 'AAAAAAAA' });
    await call('/release', { body: { leaseToken: taken.body.leaseToken, record: { status: 'completed', result: 'first' } } });
    const late = await call('/acquire', { body: { ...work, owner: 'bob', payloadHash: 'B'.repeat(43) } });
    expect(late.statusCode).toBe(422);
    expect(late.body).toMatchObject({ found: 'completed', payloadHash: 'BBBBBBBB' });
    expect(JSON.stringify(late.body)).not.toContain('first');
    expect((await call('/inspect', { query: { namespace: 'orders', granularity: 'document', id: 'h-payload' } })).body.locks[0]?.holders ?? []).toEqual([]);
    expect((await call('/acquire', { body: work })).body).toMatchObject({ status: 'completed', result: 'first' });
  });

  it('reads the key and the payload from the event: the same work as the key and hash; no key there, the lock alone and the grant says so', async () => {
    const taken = await call('/acquire', { body: doc('h-event', 'alice', { event: order('o-1', 5), eventKeyPath: 'detail.orderId', payloadPath: 'detail' }) });
    expect(taken.statusCode).toBe(200);
    expect(taken.body).not.toHaveProperty('missingKeyPath');
    await call('/release', { body: { leaseToken: taken.body.leaseToken, record: { status: 'completed', result: 5 } } });
    const hashed = doc('h-event', 'bob', { idempotencyKey: 'o-1', payloadHash: payloadHashOf({ orderId: 'o-1', amount: 5 }) });
    expect((await call('/acquire', { body: hashed })).body).toMatchObject({ status: 'completed', result: 5 });
    const changed = await call('/acquire', { body: doc('h-event', 'bob', { event: order('o-1', 6), eventKeyPath: 'detail.orderId', payloadPath: 'detail' }) });
    expect(changed.statusCode).toBe(422);

    const keyless = await call('/acquire', { body: doc('h-event-2', 'carol', { event: order(undefined, 1), eventKeyPath: 'detail.orderId' }) });
    expect(keyless.statusCode).toBe(200);
    expect(keyless.body).toMatchObject({ missingKeyPath: 'detail.orderId', owner: 'carol' });
    await call('/release', { body: { leaseToken: keyless.body.leaseToken } });
    const strict = await call('/acquire', {
      body: doc('h-event-2', 'carol', { event: order(undefined, 1), eventKeyPath: 'detail.orderId', throwOnNoKey: true }),
    });
    expect(strict.statusCode).toBe(400);
    expect(strict.body.fields).toEqual([expect.objectContaining({ field: 'eventKeyPath', rule: 'no_key' })]);
  });
});

describe('POST /acquire', () => {
  it('grants: 200 with the lease, times in ISO and epoch ms, keys with fencing tokens', async () => {
    const started = Date.now();
    const { statusCode, body } = await call('/acquire', { body: doc('h-1', 'alice', { ttlMs: 5_000 }) });
    expect(statusCode).toBe(200);
    expect(body).toMatchObject({ namespace: 'orders', granularity: 'document', mode: 'exclusive', owner: 'alice', ttlMs: 5_000, reused: false });
    expect(Date.parse(body.expiresAt)).toBe(body.expiresAtMs);
    expect(body.expiresAtMs).toBeGreaterThanOrEqual(started + 5_000);
    expect(body.keys).toEqual([{ key: 'h-1', mode: 'X', fencingToken: body.fencingToken }]);
    await call('/release', { body: { leaseToken: body.leaseToken } });
  });

  it('applies the defaults: exclusive, ttlMs 30000', async () => {
    const { body } = await call('/acquire', { body: { namespace: 'orders', granularity: 'global', owner: 'defaults' } });
    expect(body).toMatchObject({ mode: 'exclusive', ttlMs: 30_000, keys: [{ key: '*', mode: 'X' }] });
    await call('/release', { body: { leaseToken: body.leaseToken } });
  });

  it('refuses a held lock: 409 LockHeldError naming the holder, with Retry-After in whole seconds', async () => {
    const held = await call('/acquire', { body: doc('h-2', 'alice') });
    const refused = await call('/acquire', { body: doc('h-2', 'bob') });
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toMatchObject({
      error: 'LockHeldError',
      conflicts: [{ key: 'h-2', granularity: 'document', requestedMode: 'X', holders: [{ owner: 'alice', mode: 'X' }] }],
    });
    expect((refused.headers as Record<string, string>)['Retry-After']).toBe(String(Math.ceil(refused.body.retryAfterMs / 1000)));
    await call('/release', { body: { leaseToken: held.body.leaseToken } });
  });

  it('takes permits of a semaphore: each grant its own lease, the full semaphore 409 LockHeldError, another limit 409 PermitLimitMismatchError', async () => {
    const permits = (owner: string, limit: number) => doc('h-sem', owner, { permits: { limit } });
    const first = await call('/acquire', { body: permits('alice', 2) });
    const second = await call('/acquire', { body: permits('bob', 2) });
    expect(first.body.permits).toEqual({ limit: 2, count: 1 });
    expect(second.body.fencingToken).not.toBe(first.body.fencingToken);
    const full = await call('/acquire', { body: permits('carol', 2) });
    expect(full.statusCode).toBe(409);
    expect(full.body.conflicts[0].permits).toEqual({ limit: 2, taken: 2 });
    const other = await call('/acquire', { body: permits('carol', 3) });
    expect(other.statusCode).toBe(409);
    expect(other.body).toMatchObject({ error: 'PermitLimitMismatchError', retryable: false, key: 'h-sem', requestedLimit: 3, heldLimit: 2 });
    expect((other.headers as Record<string, string>)['Retry-After']).toBeUndefined();
    const inspected = await call('/inspect', { query: { namespace: 'orders', granularity: 'document', id: 'h-sem' } });
    expect(inspected.body.locks[0]).toMatchObject({ permitLimit: 2, holders: [{ permits: 1 }, { permits: 1 }] });
    for (const grant of [first, second]) await call('/release', { body: { leaseToken: grant.body.leaseToken } });
  });

  it('takes tree locks on the path (an ancestor lock sees them), and shared locks side by side', async () => {
    const tree = await call('/acquire', { body: { namespace: 'fs', granularity: 'tree', path: '/a/b/c', owner: 'w1', mode: 'shared' } });
    expect(tree.body.keys.map((key: { key: string; mode: string }) => `${key.key}:${key.mode}`)).toEqual(['/a/b/c:S']);
    const second = await call('/acquire', { body: { namespace: 'fs', granularity: 'tree', path: '/a/b/c', owner: 'w2', mode: 'shared' } });
    expect(second.statusCode).toBe(200);
    const writer = await call('/acquire', { body: { namespace: 'fs', granularity: 'tree', path: '/a', owner: 'w3' } });
    expect(writer.statusCode).toBe(409);
    for (const grant of [tree, second]) await call('/release', { body: { leaseToken: grant.body.leaseToken } });
  });

  it('a retry with the same requestId takes the earlier grant over (reused, larger fencing token)', async () => {
    const first = await call('/acquire', { body: doc('h-3', 'pipeline', { requestId: 'exec-42' }) });
    const retry = await call('/acquire', { body: doc('h-3', 'pipeline', { requestId: 'exec-42' }) });
    expect(retry.statusCode).toBe(200);
    expect(retry.body).toMatchObject({ reused: true });
    expect(BigInt(retry.body.fencingToken)).toBeGreaterThan(BigInt(first.body.fencingToken));
    await call('/release', { body: { leaseToken: retry.body.leaseToken } });
  });

  it('reads base64-encoded bodies (API Gateway does that for some content types)', async () => {
    const { statusCode, body } = await call('/acquire', { body: doc('h-4'), base64: true });
    expect(statusCode).toBe(200);
    await call('/release', { body: { leaseToken: body.leaseToken } });
  });

  it('waits when asked (waitMs) and gets the lock once the holder releases', async () => {
    const holder = await call('/acquire', { body: doc('h-5', 'holder') });
    setTimeout(() => void call('/release', { body: { leaseToken: holder.body.leaseToken } }), 300);
    const waiter = await call('/acquire', { body: doc('h-5', 'waiter', { waitMs: 5_000 }) });
    expect(waiter.statusCode).toBe(200);
    expect(BigInt(waiter.body.fencingToken)).toBeGreaterThan(BigInt(holder.body.fencingToken));
    await call('/release', { body: { leaseToken: waiter.body.leaseToken } });
  });
});

describe('validation: 400 ValidationError with one entry per field', () => {
  const cases: Array<[string, HttpEventOptions, Array<{ field: string; rule: string }>]> = [
    ['a body that is not JSON', { rawBody: '{"namespace": "orders",' }, [{ field: '(body)', rule: 'json' }]],
    ['no body', {}, [{ field: '(body)', rule: 'required' }]],
    ['a JSON array', { body: [1, 2] }, [{ field: '(body)', rule: 'type' }]],
    ['a missing owner', { body: { namespace: 'orders', granularity: 'global' } }, [{ field: 'owner', rule: 'required' }]],
    ['an unknown field', { body: { ...doc('v-1'), color: 'red' } }, [{ field: 'color', rule: 'unknown_field' }]],
    ['a TTL below the minimum', { body: { ...doc('v-1'), ttlMs: 10 } }, [{ field: 'ttlMs', rule: 'min' }]],
    ['an unknown granularity', { body: { namespace: 'orders', granularity: 'row', owner: 'x' } }, [{ field: 'granularity', rule: 'one_of' }]],
    ['a relative tree path', { body: { namespace: 'fs', granularity: 'tree', path: 'a/b', owner: 'x' } }, [{ field: 'path', rule: 'absolute_path' }]],
    [
      'ids without the document granularity',
      { body: { namespace: 'fs', granularity: 'global', ids: ['a'], owner: 'x' } },
      [{ field: 'ids', rule: 'not_allowed' }],
    ],
    ['a bad namespace', { body: { namespace: '-x', granularity: 'global', owner: 'x' } }, [{ field: 'namespace', rule: 'format' }]],
  ];
  for (const [what, options, fields] of cases) {
    it(`acquire with ${what}`, async () => {
      const { statusCode, body } = await call('/acquire', options);
      expect(statusCode).toBe(400);
      expect(body.error).toBe('ValidationError');
      expect(body.fields).toEqual(fields.map((field) => expect.objectContaining(field)));
    });
  }

  it('renew and release with a token that is not one', async () => {
    for (const path of ['/renew', '/release'] as const) {
      const { statusCode, body } = await call(path, { body: { leaseToken: 'not-a-token' } });
      expect(statusCode).toBe(400);
      expect(body.fields).toEqual([expect.objectContaining({ field: 'leaseToken', rule: 'lease_token' })]);
    }
  });
});

describe('POST /renew and POST /release', () => {
  it('renew answers a refreshed token; release with it; a second release says not_held', async () => {
    const grant = await call('/acquire', { body: doc('r-1', 'alice', { ttlMs: 2_000 }) });
    const renewed = await call('/renew', { body: { leaseToken: grant.body.leaseToken, ttlMs: 10_000 } });
    expect(renewed.statusCode).toBe(200);
    expect(renewed.body).toMatchObject({ fencingToken: grant.body.fencingToken, ttlMs: 10_000 });
    expect(renewed.body.leaseToken).not.toBe(grant.body.leaseToken);
    expect(renewed.body.expiresAtMs).toBeGreaterThan(grant.body.expiresAtMs);
    const released = await call('/release', { body: { leaseToken: renewed.body.leaseToken } });
    expect(released.body).toEqual({ outcome: 'released', releasedKeys: ['r-1'], missingKeys: [] });
    const again = await call('/release', { body: { leaseToken: renewed.body.leaseToken } });
    expect(again.body).toEqual({ outcome: 'not_held', releasedKeys: [], missingKeys: ['r-1'] });
  });

  it('renew of a released lease: 410 LeaseLostError with the lost keys', async () => {
    const grant = await call('/acquire', { body: doc('r-2') });
    await call('/release', { body: { leaseToken: grant.body.leaseToken } });
    const lost = await call('/renew', { body: { leaseToken: grant.body.leaseToken } });
    expect(lost.statusCode).toBe(410);
    expect(lost.body).toMatchObject({ error: 'LeaseLostError', lostKeys: ['r-2'] });
  });

  it('a token whose secret does not match: 403 LeaseTokenMismatchError, and the lock stays', async () => {
    const grant = await call('/acquire', { body: doc('r-3') });
    const [prefix, payload, , mac] = grant.body.leaseToken.split('.');
    const forged = [prefix, payload, 'B'.repeat(43), ...(mac ? [mac] : [])].join('.');
    for (const path of ['/renew', '/release'] as const) {
      const refused = await call(path, { body: { leaseToken: forged } });
      expect(refused.statusCode).toBe(403);
      expect(refused.body.error).toBe('LeaseTokenMismatchError');
    }
    const inspected = await call('/inspect', { query: { namespace: 'orders', granularity: 'document', id: 'r-3' } });
    expect(inspected.body.locks).toHaveLength(1);
    await call('/release', { body: { leaseToken: grant.body.leaseToken } });
  });

  it('release after expiry says expired (or not_held once someone took over)', async () => {
    const grant = await call('/acquire', { body: doc('r-4', 'alice', { ttlMs: 1_000 }) });
    await sleep(1_100);
    expect((await call('/release', { body: { leaseToken: grant.body.leaseToken } })).body.outcome).toBe('expired');
  });
});

describe('GET /inspect, GET /locks, GET /health', () => {
  it('inspect lists the holders of each key (repeated id, or ids comma-separated)', async () => {
    const a = await call('/acquire', { body: { namespace: 'inv', granularity: 'document', ids: ['i-1', 'i-2'], owner: 'alice' } });
    const byId = await call('/inspect', { query: { namespace: 'inv', granularity: 'document', id: ['i-1', 'i-2', 'i-3'] } });
    expect(byId.body.locks.map((lock: { key: string }) => lock.key).sort()).toEqual(['i-1', 'i-2']);
    expect(byId.body.locks[0].holders).toEqual([
      expect.objectContaining({ owner: 'alice', mode: 'X', expired: false, fencingToken: expect.stringMatching(/^\d+$/) }),
    ]);
    const byIds = await call('/inspect', { query: { namespace: 'inv', granularity: 'document', ids: 'i-1,i-3' } });
    expect(byIds.body.locks.map((lock: { key: string }) => lock.key)).toEqual(['i-1']);
    await call('/release', { body: { leaseToken: a.body.leaseToken } });
  });

  it('inspect without ids for the document granularity: 400', async () => {
    const { statusCode, body } = await call('/inspect', { query: { namespace: 'inv', granularity: 'document' } });
    expect(statusCode).toBe(400);
    expect(body.fields[0]).toMatchObject({ field: 'ids', rule: 'required' });
  });

  it('list by namespace, owner and path prefix (search: after a refresh)', async () => {
    const grants = [
      await call('/acquire', { body: { namespace: 'listing', granularity: 'tree', path: '/p/q', owner: 'alice' } }),
      await call('/acquire', { body: { namespace: 'listing', granularity: 'tree', path: '/r', owner: 'bob' } }),
    ];
    await client.indices.refresh({ index });
    const all = await call('/locks', { query: { namespace: 'listing' } });
    expect(all.body.locks.map((lock: { key: string }) => lock.key).sort()).toEqual(['/p/q', '/r']);
    const bob = await call('/locks', { query: { namespace: 'listing', owner: 'bob' } });
    expect(bob.body.locks.map((lock: { key: string }) => lock.key)).toEqual(['/r']);
    const under = await call('/locks', { query: { namespace: 'listing', pathPrefix: '/p', limit: '10', includeExpired: 'false' } });
    expect(under.body.locks.map((lock: { key: string }) => lock.key).sort()).toEqual(['/p/q']);
    const bad = await call('/locks', { query: { limit: 'lots' } });
    expect(bad.statusCode).toBe(400);
    for (const grant of grants) await call('/release', { body: { leaseToken: grant.body.leaseToken } });
  });

  it('health: 200 with the cluster status and the index', async () => {
    const { statusCode, body } = await call('/health');
    expect(statusCode).toBe(200);
    expect(body).toMatchObject({ status: 'ok', index });
  });
});

describe('the scheduled sweeper', () => {
  it('deletes expired locks when EventBridge fires the schedule', async () => {
    await call('/acquire', { body: doc('s-1', 'crashed', { ttlMs: 1_000 }) });
    await call('/acquire', { body: doc('s-2', 'crashed', { ttlMs: 1_000 }) });
    await sleep(1_200);
    await client.indices.refresh({ index });
    const report = (await handlers.sweeper(scheduleEvent(), lambdaContext('sweeper', 60_000))) as { deletedLocks: number; scanned: number };
    expect(report.deletedLocks).toBeGreaterThanOrEqual(2);
    const inspected = await call('/inspect', { query: { namespace: 'orders', granularity: 'document', id: ['s-1', 's-2'] } });
    expect(inspected.body.locks).toEqual([]);
  });
});

describe('a lock index that was deleted under the functions', () => {
  it('answers 500 StoreRejectedError naming the index and the command that creates it, and is not re-created', async () => {
    // Runs last in this file: the functions created the index at first use and remember that.
    await deleteLockIndex(client, index);
    const refused = await call('/acquire', { body: doc('after-delete') });
    expect(refused.statusCode).toBe(500);
    expect(refused.body).toMatchObject({ error: 'StoreRejectedError', retryable: false });
    expect(refused.body.message).toContain(index);
    expect(refused.body.message).toContain('npm run index:create');
    expect(await client.indices.exists({ index })).toBe(false);
  });
});
