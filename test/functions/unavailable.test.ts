/**
 * When Elasticsearch (or OpenSearch) does not answer: 503 StoreUnavailableError with Retry-After (HTTP), a thrown
 * StoreUnavailableError (direct), and /health says 503 too. Nothing about the cluster leaks.
 */

import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { contractProblems, fromProxyResult } from '../support/contract.js';
import { type Handlers, loadHandlers, setFunctionEnv, storeUrlEnv } from '../support/functions.js';
import { httpEvent, lambdaContext } from '../support/lambda-events.js';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let handlers: Handlers;
let port: number;

beforeAll(async () => {
  port = await closedPort();
  setFunctionEnv({ label: 'down', env: { ...storeUrlEnv(`http://127.0.0.1:${port}`), ES_REQUEST_TIMEOUT_MS: '500' } });
  handlers = await loadHandlers();
});

describe('Elasticsearch unreachable', () => {
  it('acquire over HTTP: 503 StoreUnavailableError, retryable, Retry-After, no addresses in the message', async () => {
    const response = fromProxyResult(
      await handlers.acquire(httpEvent('POST', '/acquire', { body: { namespace: 'n', granularity: 'global', owner: 'o' } }), lambdaContext('acquire')),
    );
    expect(response.statusCode).toBe(503);
    expect(contractProblems('POST', '/acquire', response)).toEqual([]);
    expect(response.body).toMatchObject({ error: 'StoreUnavailableError', retryable: true });
    expect(JSON.stringify(response.body)).not.toContain(String(port));
  });

  it('direct invocation throws StoreUnavailableError', async () => {
    // The request's shape is checked before the store is needed.
    const invalid = await handlers.release({}, lambdaContext('release')).catch((thrown: Error) => thrown);
    expect((invalid as Error).name).toBe('ValidationError');
    const down = await handlers.inspect({ namespace: 'n', granularity: 'global' }, lambdaContext('inspect')).catch((thrown: Error) => thrown);
    expect((down as Error).name).toBe('StoreUnavailableError');
  });

  it('health: 503 in the documented shape', async () => {
    const response = fromProxyResult(await handlers.health(httpEvent('GET', '/health'), lambdaContext('health')));
    expect(response.statusCode).toBe(503);
    expect(contractProblems('GET', '/health', response)).toEqual([]);
  });
});
