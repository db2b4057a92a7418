/**
 * Work named by its event (wire/event-path.ts, which the client and the service both run): the
 * subset of JMESPath a key path takes, the canonical JSON a payload is hashed by, and the client's
 * step from an event to the acquire it sends. Touches no server.
 */
import { LockClient, type Locker, ValidationError } from '@es-lease-locks/client';
import { canonicalJson, keyFromEvent, parseEventPath, payloadHashOf, valueAtPath, workFromEvent } from '@es-lease-locks/client/wire';
import { describe, expect, it } from 'vitest';
import { nameWorkByEvent } from '../../packages/client/src/event-work.js';

const sqsEvent = {
  Records: [
    { messageId: 'm-1', body: '{"orderId":"o-1"}', attributes: { ApproximateReceiveCount: '1' } },
    { messageId: 'm-2', body: '{}', attributes: {} },
  ],
};

describe('paths', () => {
  it('take dots, [index] (negative from the end) and quoted names', () => {
    expect(valueAtPath(sqsEvent, parseEventPath('Records[0].messageId') as never)).toBe('m-1');
    expect(valueAtPath(sqsEvent, parseEventPath('Records[-1].messageId') as never)).toBe('m-2');
    expect(valueAtPath({ detail: { 'order-id': 7, 'a"b': 1 } }, parseEventPath('detail."order-id"') as never)).toBe(7);
    expect(valueAtPath({ detail: { 'a"b': 1 } }, parseEventPath('detail."a\\"b"') as never)).toBe(1);
    expect(valueAtPath([[1, 2]], parseEventPath('[0][1]') as never)).toBe(2);
  });

  it('find nothing where the event has nothing, never a prototype field', () => {
    expect(valueAtPath(sqsEvent, parseEventPath('Records[5].messageId') as never)).toBeUndefined();
    expect(valueAtPath({ a: 'text' }, parseEventPath('a.length') as never)).toBeUndefined();
    expect(valueAtPath({}, parseEventPath('constructor') as never)).toBeUndefined();
    expect(valueAtPath({ a: [1] }, parseEventPath('a.b') as never)).toBeUndefined();
  });

  it.each([
    ['', 'is empty'],
    ['a..b', 'needs a name'],
    ['a.', 'ends with "."'],
    ['a b', 'where "." or "[" was expected'],
    ['a[x]', 'where "." or "[" was expected'],
    ['a.*', 'needs a name'],
    ['"open', 'without its closing quote'],
    ['x'.repeat(257), 'above 256'],
  ])('refuse %j: %s', (path, problem) => {
    const parsed = parseEventPath(path);
    expect(parsed).toHaveProperty('problem');
    expect((parsed as { problem: string }).problem).toContain(problem);
  });
});

describe('keys and payload hashes', () => {
  it('a key is a non-empty string, or a number as its JSON text; nothing, null or "" is no key; anything else is refused', () => {
    expect(keyFromEvent({ id: 'k' }, { eventKeyPath: 'id' })).toEqual({ key: 'k' });
    expect(keyFromEvent({ id: 42 }, { eventKeyPath: 'id' })).toEqual({ key: '42' });
    for (const event of [{}, { id: null }, { id: '' }]) expect(keyFromEvent(event, { eventKeyPath: 'id' })).toEqual({ missingKeyPath: 'id' });
    expect(keyFromEvent({}, { eventKeyPath: 'id', throwOnNoKey: true })).toEqual({
      issues: [expect.objectContaining({ field: 'eventKeyPath', rule: 'no_key' })],
    });
    expect(keyFromEvent({ id: true }, { eventKeyPath: 'id' })).toEqual({ issues: [expect.objectContaining({ rule: 'not_a_key' })] });
    expect(keyFromEvent({ id: 'k' }, { eventKeyPath: (event) => (event as { id: string }).id.toUpperCase() })).toEqual({ key: 'K' });
  });

  it('a payload hash does not depend on the order of fields, and does on every value', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: undefined }], a: 'x' })).toBe('{"a":"x","b":[1,{"d":1}]}');
    expect(payloadHashOf({ a: 1, b: 2 })).toBe(payloadHashOf({ b: 2, a: 1 }));
    expect(payloadHashOf({ a: 1, b: 2 })).not.toBe(payloadHashOf({ a: 1, b: 3 }));
    expect(payloadHashOf({ a: 1 })).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const notJson of [cycle, 1n, () => 1, Number.NaN]) expect(payloadHashOf(notJson)).toBeUndefined();
  });

  it('the work of an event: its key and the hash of its part at payloadPath', () => {
    const event = { id: 'evt-1', time: 't1', detail: { orderId: 'o-1', amount: 3 } };
    const work = workFromEvent(event, { eventKeyPath: 'detail.orderId', payloadPath: 'detail' });
    expect(work).toEqual({ key: 'o-1', payloadHash: payloadHashOf({ amount: 3, orderId: 'o-1' }) });
    expect(workFromEvent({ ...event, time: 't2' }, { eventKeyPath: 'detail.orderId', payloadPath: 'detail' })).toEqual(work);
    expect(workFromEvent(event, { eventKeyPath: 'detail.orderId', payloadPath: 'nothing' })).toEqual({
      issues: [expect.objectContaining({ field: 'payloadPath', rule: 'not_found' })],
    });
  });
});

describe("the client's acquire named by its event", () => {
  const request = { namespace: 'orders', granularity: 'document' as const, ids: ['o-1'], owner: 'w' };

  it('sends the key and the hash, never the event', () => {
    const named = nameWorkByEvent(request, { event: sqsEvent.Records[0], eventKeyPath: 'messageId', payloadPath: 'body' });
    expect(named).toEqual({ request: { ...request, idempotencyKey: 'm-1', payloadHash: payloadHashOf('{"orderId":"o-1"}') } });
    // The request's own key, with the event's hash.
    expect(nameWorkByEvent({ ...request, idempotencyKey: 'k' }, { event: { a: 1 } }).request).toEqual({
      ...request,
      idempotencyKey: 'k',
      payloadHash: payloadHashOf({ a: 1 }),
    });
  });

  it('no key: the request without work, told through onNoKey (or a process warning)', () => {
    const told: string[] = [];
    const named = nameWorkByEvent(request, { event: {}, eventKeyPath: 'detail.orderId', onNoKey: (path) => told.push(path) });
    expect(named).toEqual({ request, missingKeyPath: 'detail.orderId' });
    expect(told).toEqual(['detail.orderId']);
  });

  it.each([
    [{ event: {}, eventKeyPath: 'id', throwOnNoKey: true }, {}, 'eventKeyPath:no_key'],
    [{ event: { id: 'x' }, eventKeyPath: 'a..b' }, {}, 'eventKeyPath:path'],
    [{ event: { id: 'x' }, eventKeyPath: 'id' }, { idempotencyKey: 'k' }, 'idempotencyKey:not_with_event'],
    [{ event: { id: 'x' }, eventKeyPath: 'id' }, { payloadHash: 'abc' }, 'payloadHash:not_with_event'],
    [{ event: { id: 'x' } }, {}, 'eventKeyPath:required'],
    [{ eventKeyPath: 'id' }, {}, 'eventKeyPath:needs_event'],
    [{ event: { id: [1] }, eventKeyPath: 'id' }, {}, 'eventKeyPath:not_a_key'],
  ])('refuses %j (request %j) before anything is sent: %s', async (options, extra, rule) => {
    const sent: unknown[] = [];
    const transport = { acquire: async (body: unknown) => sent.push(body) } as unknown as Locker;
    const error = await new LockClient(transport).acquireOnce({ ...request, ...extra }, options).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields.map(({ field, rule: name }) => `${field}:${name}`)).toContain(rule);
    expect(sent).toEqual([]);
  });
});
