/**
 * A user's test of the README's SQS consumer (examples/invoicer/), exactly as the client's README
 * shows it (test/client/readme-examples.test.ts keeps the two the same): the lock service and the
 * invoices index in memory (`@es-lease-locks/client/testing`), no cluster. The service's decisions
 * are the engine's own; what a test controls is time, faults and who holds.
 */
import { FencedOutError, LockClient } from '@es-lease-locks/client';
import { MemorySearchIndex, testLocks } from '@es-lease-locks/client/testing';
import type { Context, SQSEvent } from 'aws-lambda';
import { expect, it, vi } from 'vitest';
import { invoicer } from '../../examples/invoicer/invoicer.js';

const message = (messageId: string, order: object) => ({ Records: [{ messageId, body: JSON.stringify(order) }] }) as SQSEvent;
const context = (awsRequestId: string) => ({ awsRequestId, getRemainingTimeInMillis: () => 60_000 }) as Context;
function setUp() {
  const locks = testLocks();
  const invoices = new MemorySearchIndex();
  return { locks, invoices, handler: invoicer(new LockClient({ transport: locks.locker }), invoices) };
}
const writes = (invoices: MemorySearchIndex) => invoices.requests.filter((request) => request.startsWith('PUT')).length;

it('a redelivery after completion gets the recorded invoice and writes nothing', async () => {
  const { handler, invoices } = setUp();
  const first = await handler(message('m-1', { orderId: 'o-1', amount: 10 }), context('r-1'));
  expect(await handler(message('m-1', { orderId: 'o-1', amount: 10 }), context('r-2'))).toEqual(first);
  expect(writes(invoices)).toBe(1);
});

it('two racing duplicates: one writes, the other waits and gets its result', async () => {
  const { handler, invoices } = setUp();
  const [a, b] = await Promise.all([1, 2].map((n) => handler(message('m-2', { orderId: 'o-2', amount: 20 }), context(`r-${n}`))));
  expect(a).toEqual(b);
  expect(writes(invoices)).toBe(1);
});

it('a lease lost mid-work: the late write is refused, the later holder’s invoice stands', async () => {
  const { handler, invoices, locks } = setUp();
  let resume = () => {};
  const stalled = new Promise<void>((resolve) => (resume = resolve));
  const send = invoices.transport.request;
  let stalling = false; // the first delivery stalls before its write (a long pause, a slow dependency)
  invoices.transport.request = async (params, options) => {
    stalling = true;
    await stalled;
    return send(params, options);
  };
  const late = handler(message('m-3', { orderId: 'o-3', amount: 30 }), context('r-late')).catch((error: unknown) => error);
  await vi.waitFor(() => expect(stalling).toBe(true));
  invoices.transport.request = send;
  await locks.expireLeases({ namespace: 'orders', granularity: 'document', ids: ['o-3'] }); // its lease runs out
  const [redelivered] = await handler(message('m-3', { orderId: 'o-3', amount: 30 }), context('r-again'));
  resume();
  expect(await late).toBeInstanceOf(FencedOutError);
  expect(invoices.document('invoices', 'o-3')?.version).toBe(redelivered!.fencingToken);
});
