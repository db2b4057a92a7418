/**
 * The operator's routes through the handlers: POST /revoke and /drain need the policy action revoke
 * (which `*` does not grant), record the caller's principal, and answer as the OpenAPI document says;
 * GET /status needs list on every namespace. A refusal changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { contractProblems, fromProxyResult, type ResponseLike } from '../support/contract.js';
import { functionsUnderTest, type Handlers } from '../support/functions.js';
import { type HttpEventOptions, httpEvent, iamCaller, lambdaContext } from '../support/lambda-events.js';

const ACCOUNT = '123456789012';
const session = (role: string, name = 'run-1') => `arn:aws:sts::${ACCOUNT}:assumed-role/${role}/${name}`;
const WORKER = session('orders-pipeline');
const ONCALL = session('oncall', 'alice@example.com');
const ADMIN = session('lock-admin');

const POLICY = {
  allow: [
    { principals: [`arn:aws:iam::${ACCOUNT}:role/orders-pipeline`], actions: ['acquire'], namespaces: ['orders'] },
    { principals: [`arn:aws:iam::${ACCOUNT}:role/oncall`], actions: ['revoke', 'inspect'], namespaces: ['orders'] },
    { principals: [`arn:aws:iam::${ACCOUNT}:role/lock-admin`], actions: ['*'], namespaces: ['*'] },
  ],
};

const { handlers, client, index } = await functionsUnderTest({ label: 'operator', env: { LOCK_POLICY: JSON.stringify(POLICY) } });

const ROUTE: Record<string, [keyof Handlers, 'GET' | 'POST']> = {
  '/acquire': ['acquire', 'POST'],
  '/renew': ['renew', 'POST'],
  '/inspect': ['inspect', 'GET'],
  '/revoke': ['revoke', 'POST'],
  '/drain': ['drain', 'POST'],
  '/status': ['status', 'GET'],
};

async function call(caller: string, path: string, options: HttpEventOptions = {}): Promise<ResponseLike & { body: any }> {
  const [name, method] = ROUTE[path]!;
  const response = fromProxyResult(await handlers[name](httpEvent(method, path, { ...options, iam: iamCaller(caller) }), lambdaContext(name)));
  expect(contractProblems(method, path, response), `${method} ${path} -> ${response.statusCode} ${JSON.stringify(response.body)}`).toEqual([]);
  return response as ResponseLike & { body: any };
}

const target = { namespace: 'orders', granularity: 'document', ids: ['o-9'] };

describe('POST /revoke', () => {
  it('takes the lock from its holder for a caller granted revoke by name, recording its principal; the holder then hears 410', async () => {
    const grant = await call(WORKER, '/acquire', { body: { ...target, owner: 'worker', ttlMs: 600_000 } });
    expect(grant.statusCode).toBe(200);

    const refused = await call(ADMIN, '/revoke', { body: { ...target, reason: 'stuck' } });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toMatchObject({ error: 'AccessDeniedError', reason: 'not_allowed', action: 'revoke' });
    expect(refused.body.message).toContain('never by "*"');
    expect((await call(ONCALL, '/inspect', { query: { namespace: 'orders', granularity: 'document', ids: 'o-9' } })).body.locks).toHaveLength(1);

    const revoked = await call(ONCALL, '/revoke', { body: { ...target, reason: 'stuck after deploy 42', by: 'alice' } });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.body).toMatchObject({ by: `arn:aws:iam::${ACCOUNT}:role/oncall (as alice)`, reason: 'stuck after deploy 42', target });
    expect(revoked.body.revoked).toEqual([expect.objectContaining({ key: 'o-9', owner: 'worker', fencingToken: grant.body.fencingToken })]);

    const renewed = await call(WORKER, '/renew', { body: { leaseToken: grant.body.leaseToken } });
    expect(renewed.statusCode).toBe(410);
    expect(renewed.body.error).toBe('LeaseLostError');
  });

  it('names the field and the rule of bad input, before any write', async () => {
    const missing = await call(ONCALL, '/revoke', { body: target });
    expect(missing.statusCode).toBe(400);
    expect(missing.body.fields).toEqual([expect.objectContaining({ field: 'reason' })]);
    const unknown = await call(ONCALL, '/revoke', { body: { ...target, reason: 'x', force: true } });
    expect(unknown.statusCode).toBe(400);
  });
});

describe('POST /drain', () => {
  it('empties the queue for a caller granted revoke, and is refused to one granted "*"', async () => {
    expect((await call(ADMIN, '/drain', { body: { ...target, reason: 'x' } })).statusCode).toBe(403);
    const drained = await call(ONCALL, '/drain', { body: { ...target, reason: 'clearing stale waiters' } });
    expect(drained.statusCode).toBe(200);
    expect(drained.body).toMatchObject({ dropped: [], told: 0, by: `arn:aws:iam::${ACCOUNT}:role/oncall` });
  });
});

describe('GET /status', () => {
  it('answers a caller who may list every namespace, and refuses one who may not', async () => {
    // Status scans by search: what the revokes above wrote is there once the index has refreshed.
    await client.indices.refresh({ index });
    const status = await call(ADMIN, '/status');
    expect(status.statusCode).toBe(200);
    expect(status.body).toMatchObject({ complete: true, shards: { primaries: 1 } });
    expect(status.body.auditRecords).toBeGreaterThanOrEqual(1);
    expect((await call(ONCALL, '/status')).statusCode).toBe(403);
  });
});
