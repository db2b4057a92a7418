/**
 * Who may lock what, through the handlers: HTTP API events carrying the caller API Gateway
 * authenticated (requestContext.authorizer.iam, as on an AWS_IAM route) and direct invocations, with
 * a namespace policy, lowered limits and quotas on held locks. Every refusal is checked against the
 * OpenAPI document, next to a call that the same rule lets through, and leaves the lock index as it was.
 */
import { describe, expect, it } from 'vitest';
import { AccessDeniedError, QuotaExceededError } from '../../packages/engine/src/errors.js';
import { contractProblems, fromProxyResult, type ResponseLike } from '../support/contract.js';
import { functionsUnderTest, type Handlers } from '../support/functions.js';
import { type HttpEventOptions, httpEvent, iamCaller, lambdaContext, scheduleEvent } from '../support/lambda-events.js';
import { requestsDuring } from '../support/requests.js';

const ACCOUNT = '123456789012';
const session = (role: string, name = 'run-1') => `arn:aws:sts::${ACCOUNT}:assumed-role/${role}/${name}`;
const ORDERS = session('orders-pipeline');
const READER = session('orders-dashboard');
const ADMIN = session('lock-admin', 'alice@example.com');
const STRANGER = session('payments-pipeline');

const POLICY = {
  allow: [
    { principals: [`arn:aws:iam::${ACCOUNT}:role/orders-pipeline`], actions: ['acquire', 'inspect'], namespaces: ['orders', 'orders-*'] },
    { principals: [`arn:aws:iam::${ACCOUNT}:role/orders-dashboard`], actions: ['inspect', 'list'], namespaces: ['orders'] },
    { principals: [`arn:aws:iam::${ACCOUNT}:role/ops/lock-admin`], actions: ['*'], namespaces: ['*'] },
    { principals: ['direct'], actions: ['acquire'], namespaces: ['jobs'] },
  ],
};

const { index, handlers, client } = await functionsUnderTest({
  label: 'authz',
  env: {
    LOCK_POLICY: JSON.stringify(POLICY),
    LOCK_MAX_IDS_PER_REQUEST: '4',
    LOCK_TTL_MAX_MS: '60000',
    LOCK_MAX_WAIT_MS: '2000',
    LOCK_MAX_LOCKS_PER_OWNER: '6',
    LOCK_MAX_LOCKS_PER_NAMESPACE: '8',
  },
});

const ROUTE: Record<string, [keyof Handlers, 'GET' | 'POST']> = {
  '/acquire': ['acquire', 'POST'],
  '/renew': ['renew', 'POST'],
  '/release': ['release', 'POST'],
  '/inspect': ['inspect', 'GET'],
  '/locks': ['list', 'GET'],
};

/** Calls the route's handler as `caller` (an ARN as API Gateway names it; undefined: no IAM principal) and checks the answer against the OpenAPI document. */
async function call(caller: string | undefined, path: string, options: HttpEventOptions = {}): Promise<ResponseLike & { body: any }> {
  const [name, method] = ROUTE[path]!;
  const event = httpEvent(method, path, { ...options, ...(caller ? { iam: iamCaller(caller) } : {}) });
  const response = fromProxyResult(await handlers[name](event, lambdaContext(name)));
  expect(contractProblems(method, path, response), `${method} ${path} -> ${response.statusCode} ${JSON.stringify(response.body)}`).toEqual([]);
  return response as ResponseLike & { body: any };
}

async function invoke<T = any>(name: keyof Handlers, payload: unknown): Promise<T> {
  return (await handlers[name](payload, lambdaContext(name))) as T;
}

const refusalOf = (promise: Promise<unknown>): Promise<Error> =>
  promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error as Error,
  );

/** Lock documents of a namespace with a live holder, once search has caught up. */
async function documentsIn(namespace: string): Promise<number> {
  await client.indices.refresh({ index });
  return (await client.count({ index, query: { bool: { filter: [{ term: { namespace } }, { range: { maxExpiresAt: { gt: Date.now() } } }] } } })).count;
}

const doc = (namespace: string, ids: string[], owner = 'w', extra: Record<string, unknown> = {}) => ({
  body: { namespace, granularity: 'document', ids, owner, ...extra },
});

describe('the namespace policy over HTTP (the caller in requestContext.authorizer.iam)', () => {
  it('acquire: allowed in the namespaces a statement names for the caller (a session of the role), refused elsewhere with nothing written', async () => {
    const granted = await call(ORDERS, '/acquire', doc('orders-eu', ['a-1']));
    expect(granted.statusCode).toBe(200);
    await call(ORDERS, '/release', { body: { leaseToken: granted.body.leaseToken } });

    const refused = await call(ORDERS, '/acquire', doc('payments', ['a-1']));
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toEqual({
      error: 'AccessDeniedError',
      message: `arn:aws:iam::${ACCOUNT}:role/orders-pipeline (${ORDERS}) may not acquire in namespace payments`,
      retryable: false,
      reason: 'not_allowed',
      action: 'acquire',
      namespace: 'payments',
      principal: `arn:aws:iam::${ACCOUNT}:role/orders-pipeline`,
    });
    // A reader may inspect but not acquire.
    expect((await call(READER, '/acquire', doc('orders', ['a-2']))).body.reason).toBe('not_allowed');
    expect(await documentsIn('payments')).toBe(0);
  });

  it('an unknown principal, and a call without one (a route without IAM authorization), are refused', async () => {
    const unknown = await call(STRANGER, '/acquire', doc('orders', ['u-1']));
    expect(unknown.statusCode).toBe(403);
    expect(unknown.body).toMatchObject({ reason: 'unknown_principal', principal: `arn:aws:iam::${ACCOUNT}:role/payments-pipeline` });
    expect(unknown.body.message).toMatch(/is not named in the namespace policy$/);
    const anonymous = await call(undefined, '/inspect', { query: { namespace: 'orders', granularity: 'global' } });
    expect(anonymous.statusCode).toBe(403);
    expect(anonymous.body).toMatchObject({ reason: 'anonymous', action: 'inspect' });
    expect(anonymous.body).not.toHaveProperty('principal');
    expect(await documentsIn('orders')).toBe(0);
  });

  it('inspect: only in the namespaces the caller may inspect', async () => {
    const query = (namespace: string) => ({ query: { namespace, granularity: 'document', id: 'i-1' } });
    expect((await call(READER, '/inspect', query('orders'))).statusCode).toBe(200);
    const refused = await call(READER, '/inspect', query('orders-eu'));
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toMatchObject({ reason: 'not_allowed', action: 'inspect', namespace: 'orders-eu' });
    expect((await call(ORDERS, '/inspect', query('payments'))).statusCode).toBe(403);
  });

  it('list: in a namespace the caller may list; without one only for a caller that may list every namespace', async () => {
    expect((await call(READER, '/locks', { query: { namespace: 'orders' } })).statusCode).toBe(200);
    const other = await call(READER, '/locks', { query: { namespace: 'orders-eu' } });
    expect(other.statusCode).toBe(403);
    expect(other.body.reason).toBe('not_allowed');
    const everywhere = await call(READER, '/locks', { query: { owner: 'w' } });
    expect(everywhere.statusCode).toBe(403);
    expect(everywhere.body).toMatchObject({ reason: 'namespace_required', action: 'list' });
    expect(everywhere.body.message).toMatch(/may list in orders only: name one \(namespace\)/);
    // The orders pipeline may not list at all: acquire and inspect only.
    expect((await call(ORDERS, '/locks', { query: { namespace: 'orders' } })).body.reason).toBe('not_allowed');
    expect((await call(ADMIN, '/locks', { query: { owner: 'w' } })).statusCode).toBe(200);
  });

  it("renew needs acquire in the lease's namespace (a caller that lost it cannot keep a lock alive); release needs only the token", async () => {
    const granted = await call(ORDERS, '/acquire', doc('orders', ['r-1'], 'w', { ttlMs: 10_000 }));
    expect(granted.statusCode).toBe(200);
    const refused = await call(READER, '/renew', { body: { leaseToken: granted.body.leaseToken, ttlMs: 60_000 } });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toMatchObject({ error: 'AccessDeniedError', reason: 'not_allowed', action: 'renew', namespace: 'orders' });
    expect(refused.body.message).toMatch(/renew needs acquire in the lease's namespace/);
    // Nothing changed: the lease still ends when the grant said.
    const held = await call(READER, '/inspect', { query: { namespace: 'orders', granularity: 'document', id: 'r-1' } });
    expect(held.body.locks[0].holders[0].expiresAtMs).toBe(granted.body.expiresAtMs);
    const renewed = await call(ORDERS, '/renew', { body: { leaseToken: granted.body.leaseToken, ttlMs: 20_000 } });
    expect(renewed.statusCode).toBe(200);
    const released = await call(READER, '/release', { body: { leaseToken: renewed.body.leaseToken } });
    expect(released.body).toEqual({ outcome: 'released', releasedKeys: ['r-1'], missingKeys: [] });
  });
});

describe('limits, configured per stage (LOCK_MAX_IDS_PER_REQUEST, LOCK_TTL_MAX_MS, LOCK_MAX_WAIT_MS): a ValidationError naming the field and the rule', () => {
  it('ids per call', async () => {
    const four = await call(ORDERS, '/acquire', doc('orders', ['l-1', 'l-2', 'l-3', 'l-4'], 'limits'));
    expect(four.statusCode).toBe(200);
    await call(ORDERS, '/release', { body: { leaseToken: four.body.leaseToken } });
    const five = await call(ORDERS, '/acquire', doc('orders', ['l-5', 'l-6', 'l-7', 'l-8', 'l-9'], 'limits'));
    expect(five.statusCode).toBe(400);
    expect(five.body.fields).toEqual([expect.objectContaining({ field: 'ids', rule: 'max' })]);
    expect(five.body.fields[0].message).toMatch(/4/);
  });

  it('TTL and waitMs', async () => {
    const longest = await call(ORDERS, '/acquire', doc('orders', ['t-1'], 'limits', { ttlMs: 60_000, waitMs: 2_000 }));
    expect(longest.statusCode).toBe(200);
    await call(ORDERS, '/release', { body: { leaseToken: longest.body.leaseToken } });
    const ttl = await call(ORDERS, '/acquire', doc('orders', ['t-2'], 'limits', { ttlMs: 60_001 }));
    expect(ttl.statusCode).toBe(400);
    expect(ttl.body.fields).toEqual([expect.objectContaining({ field: 'ttlMs', rule: 'max' })]);
    const wait = await call(ORDERS, '/acquire', doc('orders', ['t-3'], 'limits', { waitMs: 2_001 }));
    expect(wait.body.fields).toEqual([expect.objectContaining({ field: 'waitMs', rule: 'max' })]);
    const renew = await call(ORDERS, '/renew', { body: { leaseToken: longest.body.leaseToken, ttlMs: 60_001 } });
    expect(renew.body.fields).toEqual([expect.objectContaining({ field: 'ttlMs', rule: 'max' })]);
    expect(await documentsIn('orders')).toBe(0);
  });
});

describe('quotas on live locks (LOCK_MAX_LOCKS_PER_OWNER 6, LOCK_MAX_LOCKS_PER_NAMESPACE 8): 429 QuotaExceededError', () => {
  it('per owner, across its locks: refused once it holds the limit, another owner is not', async () => {
    expect((await call(ORDERS, '/acquire', doc('orders-q1', ['o-1', 'o-2', 'o-3', 'o-4'], 'quota-owner'))).statusCode).toBe(200);
    expect((await call(ORDERS, '/acquire', doc('orders-q1', ['o-5', 'o-6'], 'quota-owner'))).statusCode).toBe(200);
    await client.indices.refresh({ index });
    const refused = await call(ORDERS, '/acquire', doc('orders-q1b', ['o-7'], 'quota-owner'));
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toMatchObject({
      error: 'QuotaExceededError',
      retryable: true,
      quota: { per: 'owner', subject: 'quota-owner', limit: 6, held: 6, requested: 1 },
    });
    expect(refused.body.message).toBe('Quota exceeded: owner quota-owner holds 6 live locks (limit 6 per owner); this call asks for 1 more');
    expect(await documentsIn('orders-q1b')).toBe(0);
    expect((await call(ORDERS, '/acquire', doc('orders-q1', ['o-8'], 'quota-other'))).statusCode).toBe(200);
  });

  it('per namespace, whoever holds them: refused once the namespace holds the limit, another namespace is not', async () => {
    expect((await call(ORDERS, '/acquire', doc('orders-q2', ['n-1', 'n-2', 'n-3', 'n-4'], 'quota-a'))).statusCode).toBe(200);
    expect((await call(ORDERS, '/acquire', doc('orders-q2', ['n-5', 'n-6', 'n-7', 'n-8'], 'quota-b'))).statusCode).toBe(200);
    await client.indices.refresh({ index });
    const refused = await call(ORDERS, '/acquire', doc('orders-q2', ['n-9'], 'quota-c'));
    expect(refused.statusCode).toBe(429);
    expect(refused.body.quota).toEqual({ per: 'namespace', subject: 'orders-q2', limit: 8, held: 8, requested: 1 });
    expect(await documentsIn('orders-q2')).toBe(8);
    expect((await call(ORDERS, '/acquire', doc('orders-q3', ['n-9'], 'quota-c'))).statusCode).toBe(200);
  });

  it('costs one search per acquire (counts only), and none for renew or release', async () => {
    let token = '';
    const acquiring = await requestsDuring(async () => {
      token = (await call(ORDERS, '/acquire', doc('orders-q4', ['c-1'], 'quota-d'))).body.leaseToken;
    });
    expect(acquiring.filter((path) => path.endsWith('/_search'))).toEqual([`/${index}/_search`]);
    const after = await requestsDuring(async () => {
      const renewed = await call(ORDERS, '/renew', { body: { leaseToken: token } });
      await call(ORDERS, '/release', { body: { leaseToken: renewed.body.leaseToken } });
    });
    expect(after.filter((path) => path.includes('_search'))).toEqual([]);
  });
});

describe('direct invocations (no caller identity: the policy names them "direct") and EventBridge events', () => {
  it('acquire in a namespace the "direct" statements allow; elsewhere AccessDeniedError, the name a Step Functions Catch matches', async () => {
    const grant = await invoke('acquire', { namespace: 'jobs', granularity: 'global', owner: 'sfn' });
    expect(grant.leaseToken).toMatch(/^elk1\./);
    await invoke('release', { leaseToken: grant.leaseToken });
    const refused = await refusalOf(invoke('acquire', { namespace: 'orders', granularity: 'global', owner: 'sfn' }));
    expect(refused).toBeInstanceOf(AccessDeniedError);
    expect(refused.name).toBe('AccessDeniedError');
    expect((refused as AccessDeniedError).context).toEqual({ action: 'acquire', reason: 'not_allowed', namespace: 'orders', principal: 'direct' });
    expect(refused.message).toBe('A direct invocation (principal "direct") may not acquire in namespace orders');
    expect(await documentsIn('orders')).toBe(0);
  });

  it('inspect and list by a direct invocation that the policy does not allow them: refused, list without a namespace too', async () => {
    expect(await refusalOf(invoke('inspect', { namespace: 'jobs', granularity: 'global' }))).toMatchObject({
      name: 'AccessDeniedError',
      context: { reason: 'not_allowed', action: 'inspect' },
    });
    const list = await refusalOf(invoke('list', {}));
    expect(list).toMatchObject({ name: 'AccessDeniedError', context: { reason: 'not_allowed', action: 'list' } });
    expect(list.message).toBe('A direct invocation (principal "direct") may not list in any namespace');
  });

  it('an EventBridge event is the principal "eventbridge", unknown to this policy', async () => {
    const refused = await refusalOf(invoke('acquire', { ...scheduleEvent({ namespace: 'jobs', granularity: 'global', owner: 'rule' }), source: 'my.app' }));
    expect(refused).toMatchObject({ name: 'AccessDeniedError', context: { reason: 'unknown_principal', principal: 'eventbridge' } });
  });

  it('the quotas hold for direct invocations too', async () => {
    const grants = [];
    for (const id of ['d-1', 'd-2', 'd-3', 'd-4', 'd-5', 'd-6'])
      grants.push(await invoke('acquire', { namespace: 'jobs', granularity: 'document', ids: [id], owner: 'sfn-quota' }));
    await client.indices.refresh({ index });
    const refused = await refusalOf(invoke('acquire', { namespace: 'jobs', granularity: 'document', ids: ['d-7'], owner: 'sfn-quota' }));
    expect(refused).toBeInstanceOf(QuotaExceededError);
    expect((refused as QuotaExceededError).context).toMatchObject({ per: 'owner', held: 6 });
    for (const grant of grants) await invoke('release', { leaseToken: grant.leaseToken });
  });
});
