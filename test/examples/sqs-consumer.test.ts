/**
 * The example SQS consumer (examples/sqs-consumer/) on the real node: a batch processed concurrently
 * by Powertools' batch processor, each record under the client package's `using` with the engine
 * in-process as its transport, failures reported as a partial batch response; and what a batch of
 * ten records over two keys costs in Elasticsearch requests and conflicts with and without the
 * local lock table (SQS_MEASURE_ROUNDS rounds of each, default 3; the figures are printed).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { LocalLockTable } from '@es-lease-locks/client';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { deleteLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { engineLocker } from '../../packages/engine/src/locker.js';
import { closeTestClient, engineOn, freshLockIndex, testClient } from '../support/engine.js';
import { setFunctionEnv } from '../support/functions.js';
import { lambdaContext } from '../support/lambda-events.js';
import { CountingEngine, type Traffic } from '../support/lock-traffic.js';

const workIndex = `work-test-sqs-${randomBytes(4).toString('hex')}`;
const lockIndex = setFunctionEnv({ label: 'sqs', env: { WORK_INDEX: workIndex, RECORD_LOCK_WAIT_MS: '5000' } });
const consumer = await import('../../examples/sqs-consumer/handler.js');
const client = testClient();
const measured: SearchClient[] = [];

afterAll(async () => {
  await deleteLockIndex(client, lockIndex);
  await client.indices.delete({ index: [workIndex, `${workIndex}-measure`], ignore_unavailable: true });
  for (const other of measured) await other.close();
  await closeTestClient(client);
});

function sqsRecord(body: unknown): SQSRecord {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const now = String(Date.now());
  return {
    messageId: randomUUID(),
    receiptHandle: `AQEB${randomBytes(48).toString('base64')}`,
    body: text,
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: now, SenderId: 'AROAEXAMPLE:producer', ApproximateFirstReceiveTimestamp: now },
    messageAttributes: {},
    md5OfBody: createHash('md5').update(text).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:es-lease-locks-dev-LockedWorkQueue',
    awsRegion: 'eu-west-1',
  };
}

const sqsEvent = (bodies: unknown[]): SQSEvent => ({ Records: bodies.map(sqsRecord) });

/** Ten records, five for each of two orders, in the order a producer would have sent them. */
const tenRecordsOverTwoKeys = (namespace: string) =>
  Array.from({ length: 10 }, (_, n) => {
    const order = `order-${n % 2}`;
    return { lock: { namespace, granularity: 'document', ids: [order] }, write: { id: order, document: { order, step: n } } };
  });

describe('SQS consumer', () => {
  it('runs each record of a batch under its lock and reports only the failed records (partial batch response)', async () => {
    const good = tenRecordsOverTwoKeys('orders');
    const event = sqsEvent([...good, '{not json', { lock: { namespace: 'orders', granularity: 'document' }, write: { id: 'x', document: {} } }]);
    const response = await consumer.handler(event, lambdaContext('sqsConsumer', 30_000));
    const bad = event.Records.slice(10).map((record) => record.messageId);
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual(bad.sort());

    // Five records per key queued in the container's table behind the first: four waited for each key.
    expect(consumer.localTable.stats()).toMatchObject({ keys: 0, holders: 0, waiting: 0, queued: 8, refusedFull: 0, timedOut: 0 });
    for (const order of ['order-0', 'order-1']) {
      const written = await client.get({ index: workIndex, id: order });
      // Written under the lock: its version is a fencing token (a grant's), not a plain counter.
      expect(BigInt(written._version!)).toBeGreaterThan(1_000_000n);
      expect((written._source as { order: string }).order).toBe(order);
    }
    // Every lease was given back.
    const engine = engineOn(client, lockIndex);
    expect(await engine.inspect({ namespace: 'orders', granularity: 'document', ids: ['order-0', 'order-1'] })).toEqual([]);
  });

  it('a message delivered again after its work completed does not write again: its completion record answers', async () => {
    const message = sqsRecord({
      lock: { namespace: 'orders', granularity: 'document', ids: ['order-once'] },
      write: { id: 'order-once', document: { step: 1 } },
    });
    expect((await consumer.handler({ Records: [message] }, lambdaContext('sqsConsumer', 30_000))).batchItemFailures).toEqual([]);
    const first = await client.get({ index: workIndex, id: 'order-once' });
    // The same message id again (a visibility timeout, a retry after a lost answer), even with another body.
    const again = {
      ...message,
      body: JSON.stringify({ lock: { namespace: 'orders', granularity: 'document', ids: ['order-once'] }, write: { id: 'order-once', document: { step: 2 } } }),
    };
    again.md5OfBody = createHash('md5').update(again.body).digest('hex');
    expect((await consumer.handler({ Records: [again] }, lambdaContext('sqsConsumer', 30_000))).batchItemFailures).toEqual([]);
    const after = await client.get({ index: workIndex, id: 'order-once' });
    expect(after._source).toEqual({ step: 1 });
    expect(after._version).toBe(first._version);
  });

  it('a batch whose records all fail is handed back whole (Powertools throws)', async () => {
    await expect(consumer.handler(sqsEvent(['[]', '{}']), lambdaContext('sqsConsumer', 30_000))).rejects.toThrow(/All records failed/);
  });

  it('a batch of ten records over two keys: two acquires at a time with the local table, against ten racing ones without', async () => {
    const rounds = Number(process.env.SQS_MEASURE_ROUNDS ?? 3);
    const figures: Array<{ variant: string; round: number; traffic: Traffic; failed: number; wallMs: number }> = [];
    const lockIndexForMeasure = await freshLockIndex(client, 'sqs-measure');
    for (let round = 1; round <= rounds; round++) {
      for (const variant of ['without local table', 'with local table']) {
        // A client of its own: it counts every request the batch sends (acquire, release, the fenced writes).
        const own = testClient();
        measured.push(own);
        const engine = new CountingEngine(own, lockIndexForMeasure);
        const handler = consumer.createSqsConsumer({
          store: async () => ({ locker: engineLocker(engine), client: own }),
          workIndex: `${workIndex}-measure`,
          waitMs: 5_000,
          ...(variant === 'with local table' ? { localTable: new LocalLockTable() } : {}),
        });
        const started = performance.now();
        const response = await handler(sqsEvent(tenRecordsOverTwoKeys(`measure-${round}`)), lambdaContext('sqsConsumer', 30_000));
        const wallMs = Math.round(performance.now() - started);
        figures.push({ variant, round, traffic: engine.traffic(), failed: response.batchItemFailures.length, wallMs });
      }
    }
    console.log(
      [
        'batch of 10 records over 2 keys, processed concurrently (waitMs 5000, work = one fenced write):',
        'variant              round  ES requests  lock-store calls  write conflicts (409)  acquires  refused  max in flight (per key)  failed  wall ms',
        ...figures.map(({ variant, round, traffic: t, failed, wallMs }) =>
          [
            variant.padEnd(20),
            String(round).padStart(5),
            String(t.esRequests).padStart(12),
            String(t.lockStoreCalls).padStart(17),
            String(t.writeConflicts).padStart(22),
            String(t.acquires).padStart(9),
            String(t.acquiresRefused).padStart(8),
            `${t.maxAcquiresInFlight} (${t.maxAcquiresInFlightPerKey})`.padStart(24),
            String(failed).padStart(7),
            String(wallMs).padStart(8),
          ].join(' '),
        ),
        ...['without local table', 'with local table'].map((variant) => {
          const of = figures.filter((figure) => figure.variant === variant);
          const median = (pick: (figure: (typeof figures)[number]) => number) => {
            const sorted = of.map(pick).sort((a, b) => a - b);
            return sorted[Math.floor((sorted.length - 1) / 2)];
          };
          return `median ${variant}: ${median((f) => f.traffic.esRequests)} ES requests, ${median((f) => f.traffic.writeConflicts)} write conflicts, ${median((f) => f.failed)} failed, ${median((f) => f.wallMs)} ms`;
        }),
      ].join('\n'),
    );

    const withTable = figures.filter((figure) => figure.variant === 'with local table');
    const without = figures.filter((figure) => figure.variant === 'without local table');
    for (const { traffic, failed } of withTable) {
      expect(traffic).toMatchObject({ acquires: 10, maxAcquiresInFlightPerKey: 1, writeConflicts: 0, acquiresRefused: 0 });
      expect(traffic.maxAcquiresInFlight).toBeLessThanOrEqual(2);
      expect(failed).toBe(0);
    }
    for (const { traffic } of without) {
      // All ten go out at once and race for the two lock documents.
      expect(traffic.maxAcquiresInFlight).toBe(10);
      expect(traffic.writeConflicts).toBeGreaterThan(0);
    }
    const total = (list: typeof figures) => list.reduce((sum, figure) => sum + figure.traffic.esRequests, 0);
    expect(total(withTable)).toBeLessThan(total(without));
  });
});
