/** Telling invocations apart and reading their input with the Powertools parser's schemas (functions/runtime/events.ts). */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { inputReader, invocationOf } from '../../functions/runtime/events.js';
import { ValidationError } from '../../packages/engine/src/index.js';
import { httpEvent, scheduleEvent } from '../support/lambda-events.js';

const schema = z.object({ namespace: z.string(), ttlMs: z.number().optional() }).strict();
const reader = inputReader(schema);

/** What serverless-offline 14 sends for `POST /acquire`: not quite what API Gateway sends. */
function offlineEvent(body: string | null) {
  return {
    body,
    headers: { host: '127.0.0.1:3000', 'content-type': 'application/json' },
    isBase64Encoded: false,
    pathParameters: null,
    queryStringParameters: null,
    rawPath: '/acquire',
    rawQueryString: '',
    requestContext: {
      accountId: 'offlineContext_accountId',
      apiId: 'offlineContext_apiId',
      authorizer: { jwt: { claims: undefined, scopes: undefined } },
      domainName: 'offlineContext_domainName',
      domainPrefix: 'offlineContext_domainPrefix',
      http: { method: 'POST', path: '/acquire', protocol: 'HTTP/1.1', sourceIp: '::ffff:127.0.0.1', userAgent: '' },
      requestId: 'offlineContext_resourceId',
      routeKey: 'POST /acquire',
      stage: '$default',
      time: '22/Nov/2026:19:31:14 +0000',
      timeEpoch: 1_795_462_274_000,
    },
    routeKey: 'POST /acquire',
    stageVariables: null,
    version: '2.0',
  };
}

function fieldsOf(run: () => unknown) {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).fields.map(({ field, rule }) => ({ field, rule }));
  }
  throw new Error('expected a ValidationError');
}

describe('invocations', () => {
  it('an API Gateway HTTP API event is an HTTP call, and its JSON body is the input', () => {
    const invocation = invocationOf(httpEvent('POST', '/acquire', { body: { namespace: 'orders' } }));
    expect(invocation.kind).toBe('http');
    expect(reader.read(invocation)).toEqual({ namespace: 'orders' });
  });

  it('a base64-encoded body is decoded first', () => {
    const invocation = invocationOf(httpEvent('POST', '/acquire', { body: { namespace: 'b64' }, base64: true }));
    expect(reader.read(invocation)).toEqual({ namespace: 'b64' });
  });

  it("serverless-offline's event is an HTTP call too (null query parameters, an empty authorizer)", () => {
    const invocation = invocationOf(offlineEvent('{"namespace":"local"}'));
    expect(invocation.kind).toBe('http');
    expect(reader.read(invocation)).toEqual({ namespace: 'local' });
  });

  it('an EventBridge event gives its detail; anything else is a direct invocation', () => {
    const scheduled = invocationOf(scheduleEvent({ namespace: 'nightly' }));
    expect(scheduled.kind).toBe('eventbridge');
    expect(reader.read(scheduled)).toEqual({ namespace: 'nightly' });
    const direct = invocationOf({ namespace: 'direct', version: '2.0' });
    expect(direct.kind).toBe('direct');
    expect(fieldsOf(() => reader.read(direct))).toEqual([{ field: 'version', rule: 'unknown_field' }]);
  });

  it('fields are named as the caller wrote them, without the envelope around them', () => {
    const http = invocationOf(httpEvent('POST', '/acquire', { body: { ttlMs: 'soon' } }));
    expect(fieldsOf(() => reader.read(http))).toEqual([
      { field: 'namespace', rule: 'required' },
      { field: 'ttlMs', rule: 'type' },
    ]);
    const scheduled = invocationOf(scheduleEvent({ namespace: 7 }));
    expect(fieldsOf(() => reader.read(scheduled))).toEqual([{ field: 'namespace', rule: 'type' }]);
  });

  it('a missing or unreadable body is named as such', () => {
    expect(fieldsOf(() => reader.read(invocationOf(offlineEvent(null))))).toEqual([{ field: '(body)', rule: 'required' }]);
    expect(fieldsOf(() => reader.read(invocationOf(offlineEvent('{"namespace":'))))).toEqual([{ field: '(body)', rule: 'json' }]);
  });

  it('GET routes read the query string', () => {
    const query = inputReader(schema, { fromQuery: (params) => Object.fromEntries(params) });
    expect(query.read(invocationOf(httpEvent('GET', '/inspect', { query: { namespace: 'q' } })))).toEqual({ namespace: 'q' });
  });
});
