/**
 * The README's SQS consumer: invoices each order once, however often its message comes back, and
 * its write is refused by Elasticsearch if the lock was lost to a later holder. Its clients come in
 * from handler.ts (deployed) or from a test (test/examples/invoicer.test.ts, with the client's
 * testing entry: no cluster).
 */
import { type FencedWritesClient, fencedIndex, type LockClient } from '@es-lease-locks/client';
import type { Context, SQSEvent } from 'aws-lambda';

export function invoicer(locks: LockClient, es: FencedWritesClient) {
  return async (event: SQSEvent, context: Context) => {
    const invoices = [];
    for (const message of event.Records) {
      const { orderId, amount } = JSON.parse(message.body) as { orderId: string; amount: number };
      const invoice = await locks.using(
        // The message id names the work: a redelivery after it completed gets the recorded result, and runs nothing.
        {
          namespace: 'orders',
          granularity: 'document',
          ids: [orderId],
          owner: `invoicer:${context.awsRequestId}`,
          ttlMs: 30_000,
          waitMs: 5_000,
          idempotencyKey: message.messageId,
        },
        async (_signal, lock) => {
          // The fencing token is the document's version: a write under an older token fails with FencedOutError.
          await fencedIndex(es, { index: 'invoices', id: orderId, document: { orderId, amount }, fencingToken: lock });
          return { orderId, fencingToken: lock.fencingToken }; // recorded with the completion (JSON, 32 KiB at most)
        },
        // Renewed in the background; no lease past this invocation's deadline; the record is kept for a day.
        { remainingTimeMs: () => context.getRemainingTimeInMillis(), recordTtlMs: 86_400_000 },
      );
      invoices.push(invoice);
    }
    return invoices;
  };
}
