/**
 * Who may lock what, end to end on the local stack (startStack: serverless-offline running the
 * bundled functions, stage `local`) with a namespace policy, lowered limits and quotas given the way
 * a user gives them (LOCK_POLICY, LOCK_MAX_* in the environment of `npm run dev`).
 *
 * serverless-offline authenticates nothing (it refuses the AWS_IAM authorization type, which is why
 * the local stage's routes have none). The caller reaches the functions through its own
 * `sls-offline-authorizer-override` header, which it copies into requestContext.authorizer, where API
 * Gateway puts the caller it authenticated from the SigV4 signature on an AWS_IAM route. Direct
 * invocations go through its local Lambda invoke endpoint and carry no identity, as on Lambda.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { deleteLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { freePort } from '../../infra/lib/free-port.js';
import { type StackDetails, startStack } from '../../scripts/stack.js';
import { contractProblems } from '../support/contract.js';
import { testClient } from '../support/engine.js';
import { iamCaller } from '../support/lambda-events.js';

const ACCOUNT = '123456789012';
const session = (role: string) => `arn:aws:sts::${ACCOUNT}:assumed-role/${role}/run-${randomBytes(3).toString('hex')}`;
const PIPELINE = session('orders-pipeline');
const DASHBOARD = session('orders-dashboard');
const STRANGER = session('payments-pipeline');
const POLICY = {
  allow: [
    { principals: [`arn:aws:iam::${ACCOUNT}:role/orders-pipeline`], actions: ['acquire'], namespaces: ['orders', 'orders-*'] },
    { principals: [`arn:aws:iam::${ACCOUNT}:role/orders-dashboard`], actions: ['inspect', 'list'], namespaces: ['orders'] },
    { principals: ['direct'], actions: ['acquire'], namespaces: ['jobs'] },
  ],
};

let stack: StackDetails;
let client: SearchClient;
const index = `locks-test-authz-stack-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  client = testClient();
  stack = await startStack({
    port: await freePort(),
    lambdaPort: await freePort(),
    env: {
      ES_URL: inject('esUrl'),
      ES_API_KEY: inject('esApiKey'),
      LOCK_INDEX: index,
      SWEEP_RATE: 'rate(1 day)',
      LOCK_POLICY: JSON.stringify(POLICY),
      LOCK_MAX_IDS_PER_REQUEST: '3',
      LOCK_TTL_MAX_MS: '60000',
      LOCK_MAX_LOCKS_PER_OWNER: '3',
      LOCK_MAX_LOCKS_PER_NAMESPACE: '4',
    },
  });
}, 240_000);
afterAll(async () => {
  await stack?.stop();
  await deleteLockIndex(client, index);
  await client.close();
});

/** An HTTP call as `caller` (an ARN as API Gateway names it; undefined: no principal), checked against the OpenAPI document. */
async function http(caller: string | undefined, method: 'GET' | 'POST', path: string, body?: unknown) {
  const headers: Record<string, string> = {
    ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    ...(caller ? { 'sls-offline-authorizer-override': JSON.stringify({ iam: iamCaller(caller) }) } : {}),
  };
  const response = await fetch(`${stack.baseUrl}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const parsed = { statusCode: response.status, headers: response.headers, body: (await response.json()) as any };
  expect(contractProblems(method, path.split('?')[0]!, parsed), `${method} ${path} -> ${response.status} ${JSON.stringify(parsed.body)}`).toEqual([]);
  return parsed;
}

async function invoke(name: string, payload: unknown) {
  const response = await fetch(`${stack.lambdaUrl}/2015-03-31/functions/${stack.functionName(name)}/invocations`, {
    method: 'POST',
    body: JSON.stringify(payload),
  });
  return { functionError: response.headers.get('x-amz-function-error'), payload: (await response.json()) as any };
}

const acquire = (caller: string | undefined, namespace: string, ids: string[], owner = 'w', extra: Record<string, unknown> = {}) =>
  http(caller, 'POST', '/acquire', { namespace, granularity: 'document', ids, owner, ...extra });

async function liveIn(namespace: string): Promise<number> {
  await client.indices.refresh({ index });
  return (await client.count({ index, query: { bool: { filter: [{ term: { namespace } }, { range: { maxExpiresAt: { gt: Date.now() } } }] } } })).count;
}

describe('the namespace policy on the local stack', () => {
  it('acquire in a namespace the caller may use; refused in another, and for an unknown or a missing principal', async () => {
    const granted = await acquire(PIPELINE, 'orders', ['s-1']);
    expect(granted.statusCode).toBe(200);
    await http(PIPELINE, 'POST', '/release', { leaseToken: granted.body.leaseToken });
    const elsewhere = await acquire(PIPELINE, 'payments', ['s-1']);
    expect(elsewhere.statusCode).toBe(403);
    expect(elsewhere.body).toMatchObject({
      error: 'AccessDeniedError',
      reason: 'not_allowed',
      namespace: 'payments',
      principal: `arn:aws:iam::${ACCOUNT}:role/orders-pipeline`,
    });
    expect((await acquire(STRANGER, 'orders', ['s-2'])).body).toMatchObject({ reason: 'unknown_principal' });
    expect((await acquire(undefined, 'orders', ['s-2'])).body).toMatchObject({ reason: 'anonymous' });
    expect(await liveIn('payments')).toBe(0);
    expect(await liveIn('orders')).toBe(0);
  });

  it('inspect and list only where the policy says; list without a namespace refused to a caller that may not list them all', async () => {
    expect((await http(DASHBOARD, 'GET', '/inspect?namespace=orders&granularity=global')).statusCode).toBe(200);
    expect((await http(DASHBOARD, 'GET', '/inspect?namespace=orders-eu&granularity=global')).body).toMatchObject({ reason: 'not_allowed', action: 'inspect' });
    expect((await http(PIPELINE, 'GET', '/inspect?namespace=orders&granularity=global')).statusCode).toBe(403);
    expect((await http(DASHBOARD, 'GET', '/locks?namespace=orders')).statusCode).toBe(200);
    expect((await http(DASHBOARD, 'GET', '/locks?namespace=payments')).body).toMatchObject({ reason: 'not_allowed', action: 'list' });
    const everywhere = await http(DASHBOARD, 'GET', '/locks?owner=w');
    expect(everywhere.statusCode).toBe(403);
    expect(everywhere.body).toMatchObject({ reason: 'namespace_required' });
  });

  it('direct invocations through the Lambda endpoint are the principal "direct"', async () => {
    const grant = await invoke('acquire', { namespace: 'jobs', granularity: 'global', owner: 'sfn' });
    expect(grant.functionError).toBeNull();
    await invoke('release', { leaseToken: grant.payload.leaseToken });
    const refused = await invoke('acquire', { namespace: 'orders', granularity: 'global', owner: 'sfn' });
    expect(refused.functionError).toBe('Unhandled');
    // serverless-offline reports errorType "Error" (its worker threads lose the name); Lambda reports error.name.
    expect(refused.payload.trace[0]).toMatch(/^AccessDeniedError: A direct invocation \(principal "direct"\) may not acquire in namespace orders/);
    expect((await invoke('list', {})).payload.trace[0]).toMatch(/^AccessDeniedError: A direct invocation \(principal "direct"\) may not list in any namespace/);
  });
});

describe('limits and quotas on the local stack (LOCK_MAX_IDS_PER_REQUEST 3, LOCK_TTL_MAX_MS 60000, 3 live locks per owner, 4 per namespace)', () => {
  it('ids and TTL over the limit: 400 naming the field and the rule', async () => {
    const ids = await acquire(PIPELINE, 'orders', ['l-1', 'l-2', 'l-3', 'l-4']);
    expect(ids.statusCode).toBe(400);
    expect(ids.body.fields).toEqual([expect.objectContaining({ field: 'ids', rule: 'max' })]);
    const ttl = await acquire(PIPELINE, 'orders', ['l-1'], 'w', { ttlMs: 60_001 });
    expect(ttl.statusCode).toBe(400);
    expect(ttl.body.fields).toEqual([expect.objectContaining({ field: 'ttlMs', rule: 'max' })]);
    expect((await acquire(PIPELINE, 'orders', ['l-1', 'l-2', 'l-3'], 'w', { ttlMs: 60_000 })).statusCode).toBe(200);
  });

  it('per owner: 429 once the owner holds 3 live locks; another owner goes on', async () => {
    expect((await acquire(PIPELINE, 'orders-a', ['o-1', 'o-2'], 'quota-owner')).statusCode).toBe(200);
    expect((await acquire(PIPELINE, 'orders-b', ['o-3'], 'quota-owner')).statusCode).toBe(200);
    await client.indices.refresh({ index });
    const refused = await acquire(PIPELINE, 'orders-c', ['o-4'], 'quota-owner');
    expect(refused.statusCode).toBe(429);
    expect(refused.body.quota).toEqual({ per: 'owner', subject: 'quota-owner', limit: 3, held: 3, requested: 1 });
    expect(await liveIn('orders-c')).toBe(0);
    expect((await acquire(PIPELINE, 'orders-c', ['o-4'], 'quota-other')).statusCode).toBe(200);
  });

  it('per namespace: 429 once the namespace holds 4 live locks, whoever holds them; direct invocations count and are refused too', async () => {
    expect((await acquire(PIPELINE, 'orders-n', ['n-1', 'n-2'], 'quota-x')).statusCode).toBe(200);
    expect((await acquire(PIPELINE, 'orders-n', ['n-3', 'n-4'], 'quota-y')).statusCode).toBe(200);
    await client.indices.refresh({ index });
    const refused = await acquire(PIPELINE, 'orders-n', ['n-5'], 'quota-z');
    expect(refused.statusCode).toBe(429);
    expect(refused.body.quota).toEqual({ per: 'namespace', subject: 'orders-n', limit: 4, held: 4, requested: 1 });
    for (const owner of ['sfn-1', 'sfn-2']) {
      expect((await invoke('acquire', { namespace: 'jobs', granularity: 'document', ids: [`${owner}-a`, `${owner}-b`], owner })).functionError).toBeNull();
    }
    await client.indices.refresh({ index });
    const direct = await invoke('acquire', { namespace: 'jobs', granularity: 'document', ids: ['sfn-3-a'], owner: 'sfn-3' });
    expect(direct.functionError).toBe('Unhandled');
    expect(direct.payload.trace[0]).toMatch(/^QuotaExceededError: Quota exceeded: namespace jobs holds 4 live locks \(limit 4 per namespace\)/);
  });
});
