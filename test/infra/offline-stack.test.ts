/**
 * End to end over HTTP: startStack (Elasticsearch + serverless-offline running the bundled
 * functions), then acquire, a conflicting acquire (409 + Retry-After), renew, release, and the
 * sweeper through the local Lambda invoke endpoint.
 */

import { randomBytes } from 'node:crypto';
import { httpTransport, LockClient, LockHeldError } from '@es-lease-locks/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { deleteLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { freePort } from '../../infra/lib/free-port.js';
import { type StackDetails, startStack } from '../../scripts/stack.js';
import { contractProblems } from '../support/contract.js';
import { sleep, testClient } from '../support/engine.js';

let stack: StackDetails;
let client: SearchClient;
const index = `locks-test-offline-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  client = testClient();
  stack = await startStack({
    port: await freePort(),
    lambdaPort: await freePort(),
    env: { ES_URL: inject('esUrl'), ES_API_KEY: inject('esApiKey'), LOCK_INDEX: index, MAX_CLOCK_SKEW_MS: '50', SWEEP_RATE: 'rate(1 day)' },
  });
}, 240_000);
afterAll(async () => {
  await stack?.stop();
  await deleteLockIndex(client, index);
  await client.close();
});

async function http(method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
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

describe('the stack on serverless-offline', () => {
  it('health answers 200', async () => {
    expect((await http('GET', '/health')).body).toMatchObject({ status: 'ok', index });
  });

  it('acquire, conflicting acquire (409, Retry-After), renew, release', async () => {
    const body = { namespace: 'e2e', granularity: 'document', ids: ['x-1'], owner: 'alice', ttlMs: 5_000 };
    const grant = await http('POST', '/acquire', body);
    expect(grant.statusCode).toBe(200);
    const conflict = await http('POST', '/acquire', { ...body, owner: 'bob' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.body.conflicts[0].holders[0].owner).toBe('alice');
    expect(Number(conflict.headers.get('retry-after'))).toBe(Math.ceil(conflict.body.retryAfterMs / 1000));
    const renewed = await http('POST', '/renew', { leaseToken: grant.body.leaseToken, ttlMs: 10_000 });
    expect(renewed.statusCode).toBe(200);
    expect(renewed.body.fencingToken).toBe(grant.body.fencingToken);
    const released = await http('POST', '/release', { leaseToken: renewed.body.leaseToken });
    expect(released.body).toEqual({ outcome: 'released', releasedKeys: ['x-1'], missingKeys: [] });
    expect((await http('POST', '/renew', { leaseToken: renewed.body.leaseToken })).statusCode).toBe(410);
    expect((await http('POST', '/acquire', { ...body, ttlMs: 'soon' })).statusCode).toBe(400);
  });

  it('inspect and list', async () => {
    const grant = await http('POST', '/acquire', { namespace: 'e2e', granularity: 'tree', path: '/t/u', owner: 'carol' });
    expect((await http('GET', '/inspect?namespace=e2e&granularity=tree&path=/t/u')).body.locks).toHaveLength(1);
    await client.indices.refresh({ index });
    expect((await http('GET', '/locks?namespace=e2e&owner=carol')).body.locks.map((lock: { key: string }) => lock.key).sort()).toEqual(['/t/u']);
    await http('POST', '/release', { leaseToken: grant.body.leaseToken });
  });

  it('the sweeper, invoked through the local Lambda endpoint, deletes expired locks', async () => {
    // A namespace of its own: a global lock's document is kept (marked) once ids or paths below it were locked.
    await http('POST', '/acquire', { namespace: 'e2e-swept', granularity: 'global', owner: 'crashed', ttlMs: 1_000 });
    await sleep(1_200);
    await client.indices.refresh({ index });
    const { functionError, payload } = await invoke('sweeper', {});
    expect(functionError).toBeNull();
    expect(payload.deletedLocks).toBeGreaterThanOrEqual(1);
    expect((await http('GET', '/inspect?namespace=e2e-swept&granularity=global')).body.locks).toEqual([]);
  });

  it('direct invocation: the grant as a plain object, a refusal as a function error', async () => {
    const request = { namespace: 'e2e', granularity: 'document', ids: ['d-1'], owner: 'sfn' };
    const grant = await invoke('acquire', request);
    expect(grant.functionError).toBeNull();
    expect(grant.payload.leaseToken).toMatch(/^elk1\./);
    const refused = await invoke('acquire', { ...request, owner: 'other' });
    expect(refused.functionError).toBe('Unhandled');
    // serverless-offline reports errorType "Error" (its worker threads lose the name); Lambda reports error.name.
    expect(refused.payload.trace[0]).toMatch(/^LockHeldError/);
    await invoke('release', { leaseToken: grant.payload.leaseToken });
  });

  it('the client package works against it: a lock renewed past its TTL, refused to another, released', async () => {
    const locks = new LockClient(httpTransport(stack.baseUrl));
    const fencing = await locks.using({ namespace: 'e2e', granularity: 'global', owner: 'client', ttlMs: 1_000 }, async (_signal, lock) => {
      await sleep(1_300);
      await expect(locks.acquire({ namespace: 'e2e', granularity: 'global', owner: 'intruder' })).rejects.toBeInstanceOf(LockHeldError);
      return lock.fencingToken;
    });
    expect(BigInt(fencing)).toBeGreaterThan(0n);
    expect(await locks.inspect({ namespace: 'e2e', granularity: 'global' })).toEqual([]);
  });
});
