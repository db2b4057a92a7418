/** LockHttpClient against the real handlers (behind a small API Gateway-like bridge): results and errors as classes. */

import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorFromResponse, LockHttpClient } from '../../functions/client/index.js';
import {
  LeaseLostError,
  LeaseTokenMismatchError,
  LockHeldError,
  LockOutcomeUnknownError,
  StoreUnavailableError,
  ValidationError,
} from '../../functions/core/errors.js';
import { deleteLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { testClient } from '../support/engine.js';
import { loadHandlers, setFunctionEnv } from '../support/functions.js';
import { serveHandlers } from '../support/http-bridge.js';

let server: { baseUrl: string; close(): Promise<void> };
let api: LockHttpClient;
let client: SearchClient;
const index = setFunctionEnv({ label: 'httpclient' });

beforeAll(async () => {
  server = await serveHandlers(await loadHandlers());
  api = new LockHttpClient(server.baseUrl);
  client = testClient();
});
afterAll(async () => {
  await server.close();
  await deleteLockIndex(client, index);
  await client.close();
});

describe('LockHttpClient', () => {
  it('acquire, inspect, list, renew, release, health', async () => {
    const grant = await api.acquire({ namespace: 'hc', granularity: 'tree', path: '/docs/a', owner: 'me', ttlMs: 5_000 });
    // Health needs the lock index, which the first acquire created (health itself creates nothing).
    expect((await api.health()).status).toBe('ok');
    expect(grant.keys).toHaveLength(1);
    expect((await api.inspect({ namespace: 'hc', granularity: 'tree', path: '/docs/a' })).map((state) => state.key).sort()).toEqual(['/docs/a']);
    await client.indices.refresh({ index });
    expect((await api.list({ namespace: 'hc', pathPrefix: '/docs' })).length).toBe(1);
    const renewal = await api.renew({ leaseToken: grant.leaseToken, ttlMs: 8_000 });
    expect(renewal.ttlMs).toBe(8_000);
    expect((await api.release({ leaseToken: renewal.leaseToken })).outcome).toBe('released');
  });

  it('turns error bodies back into the engine error classes', async () => {
    const grant = await api.acquire({ namespace: 'hc', granularity: 'global', owner: 'holder' });
    const held = await api.acquire({ namespace: 'hc', granularity: 'global', owner: 'other' }).catch((error: unknown) => error);
    expect(held).toBeInstanceOf(LockHeldError);
    expect((held as LockHeldError).retryAfterMs).toBeGreaterThan(0);
    expect((held as LockHeldError).conflicts[0]).toMatchObject({ key: '*', holders: [{ owner: 'holder', mode: 'X', expiresAt: expect.any(Number) }] });
    expect((held as LockHeldError).message).toContain('holder');

    const invalid = await api.acquire({ namespace: 'hc', granularity: 'tree', owner: 'x' }).catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(ValidationError);
    expect((invalid as ValidationError).fields).toEqual([expect.objectContaining({ field: 'path', rule: 'required' })]);

    const [prefix, payload, , mac] = grant.leaseToken.split('.');
    const forged = [prefix, payload, 'D'.repeat(43), ...(mac ? [mac] : [])].join('.');
    await expect(api.renew({ leaseToken: forged })).rejects.toBeInstanceOf(LeaseTokenMismatchError);

    await api.release({ leaseToken: grant.leaseToken });
    const lost = await api.renew({ leaseToken: grant.leaseToken }).catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect((lost as LeaseLostError).lostKeys).toEqual(['*']);
  });

  it('keeps what the caller needs from an unknown outcome and from a reused requestId', () => {
    const unknown = errorFromResponse(503, {
      error: 'LockOutcomeUnknownError',
      message: 'may hold',
      retryable: true,
      requestId: 'run-3',
      mayHoldUntil: '2026-11-22T12:00:00.000Z',
    });
    expect(unknown).toBeInstanceOf(LockOutcomeUnknownError);
    expect(unknown).toMatchObject({ retryable: true, context: { requestId: 'run-3', mayHoldUntil: Date.parse('2026-11-22T12:00:00.000Z') } });
    const reused = errorFromResponse(409, {
      error: 'LockHeldError',
      message: 'held',
      retryAfterMs: 100,
      conflicts: [{ key: 'y', granularity: 'document', requestedMode: 'X', holders: [], reason: 'request_id_reused' }],
    });
    expect((reused as LockHeldError).conflicts[0]?.reason).toBe('request_id_reused');
  });

  it('no answer at all is StoreUnavailableError (retryable)', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const nowhere = new LockHttpClient({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 1_000 });
    const error = await nowhere.acquire({ namespace: 'hc', granularity: 'global', owner: 'x' }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).retryable).toBe(true);
  });
});
