/** Anything unexpected answers 500 InternalError with a correlation id and no internals. */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { contractProblems, fromProxyResult } from '../support/contract.js';
import { testClient } from '../support/engine.js';
import { type Handlers, loadHandlers, setFunctionEnv } from '../support/functions.js';
import { httpEvent, lambdaContext } from '../support/lambda-events.js';

// An index that exists but is not a lock index: ensuring it fails in a way no retry fixes.
const index = setFunctionEnv({ label: 'notlocks' });
let handlers: Handlers;
let client: SearchClient;

beforeAll(async () => {
  client = testClient();
  await client.indices.create({ index, mappings: { properties: { something: { type: 'keyword' } } } });
  handlers = await loadHandlers();
});
afterAll(async () => {
  await client.indices.delete({ index }, { ignore: [404] });
  await client.close();
});

describe('internal errors', () => {
  it('HTTP: 500 InternalError; the message names the correlation id, not the index or its mapping', async () => {
    const event = httpEvent('POST', '/acquire', { body: { namespace: 'n', granularity: 'global', owner: 'o' } });
    const response = fromProxyResult(await handlers.acquire(event, lambdaContext('acquire')));
    expect(response.statusCode).toBe(500);
    expect(contractProblems('POST', '/acquire', response)).toEqual([]);
    const text = JSON.stringify(response.body);
    expect(text).toContain(event.requestContext.requestId);
    expect(text).not.toContain(index);
    expect(text).not.toContain('missing fields');
  });

  it('direct: throws InternalError', async () => {
    const error = await handlers.acquire({ namespace: 'n', granularity: 'global', owner: 'o' }, lambdaContext('acquire')).catch((thrown: Error) => thrown);
    expect((error as Error).name).toBe('InternalError');
    expect((error as Error).message).not.toContain(index);
  });
});
