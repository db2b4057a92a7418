/**
 * A user's test of the README's SQS consumer (examples/invoicer/), as the client's README shows it:
 * the lock service and the invoices index in memory (`@es-lease-locks/client/testing`), no cluster.
 * The service's decisions are the engine's own; what a test controls is time, faults and who holds.
 */
import { FencedOutError, LockClient } from '@es-lease-locks/client';
import { MemorySearchIndex, testLocks } from '@es-lease-locks/client/testing';
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { invoicer } from '../../examples/invoicer/invoicer.js';

const message = (messageId: string, order: { orderId: string; amount: number }) => ({ Records: [{ messageId, body: JSON.stringify(order) }] }) as SQSEvent;
const context = (awsRequestId: string) => ({ awsRequestId, getRemainingTimeInMillis: () => 60_000 }) as Context;

function setUp() {
  const locks = testLocks();
  const invoices = new MemorySearchIndex();
  const handler = invoicer(new LockClient({ transport: locks.locker }), invoices);
  return { locks, invoices, handler };
}

describe('the invoicer, tested without a cluster', () => {
  it('a redelivery after completion gets the recorded invoice and writes nothing', async () => {
    const { handler, invoices } = setUp();
    const first = await handler(message('m-1', { orderId: 'o-1', amount: 10 }), context('r-1'));
    const again = await handler(message('m-1', { orderId: 'o-1', amount: 10 }), context('r-2'));
    expect(again).toEqual(first);
    expect(invoices.requests.filter((request) => request.startsWith('PUT'))).toHaveLength(1);
  });

  it('two racing duplicates: one writes, the other waits and gets its result', async () => {
    const { handler, invoices } = setUp();
    const [a, b] = await Promise.all([
      handler(message('m-2', { orderId: 'o-2', amount: 20 }), context('r-a')),
      handler(message('m-2', { orderId: 'o-2', amount: 20 }), context('r-b')),
    ]);
    expect(a).toEqual(b);
    expect(invoices.requests.filter((request) => request.startsWith('PUT'))).toHaveLength(1);
  });

  it('a lease lost mid-work: the late write is refused, the later holder’s invoice stands', async () => {
    const { handler, invoices, locks } = setUp();
    // The first delivery stalls before its write (a long GC pause, a slow dependency)...
    let resume!: () => void;
    const stalled = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const request = invoices.transport.request;
    let firstWrite = true;
    invoices.transport.request = async (params, options) => {
      if (params.method === 'PUT' && firstWrite) {
        firstWrite = false;
        await stalled;
      }
      return request(params, options);
    };
    const late = handler(message('m-3', { orderId: 'o-3', amount: 30 }), context('r-late')).catch((error: unknown) => error);
    await vi.waitFor(() => expect(firstWrite).toBe(false), { interval: 1 });
    // ...its lease runs out, and SQS delivers the message again after the visibility timeout.
    await locks.expireLeases({ namespace: 'orders', granularity: 'document', ids: ['o-3'] });
    const [redelivered] = await handler(message('m-3', { orderId: 'o-3', amount: 30 }), context('r-again'));
    resume();
    const refused = await late;
    expect(refused).toBeInstanceOf(FencedOutError);
    expect(invoices.document('invoices', 'o-3')?.version).toBe(redelivered!.fencingToken);
  });
});
