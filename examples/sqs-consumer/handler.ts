/**
 * SQS consumer, an example pipeline stage: Lambda hands it a batch of records, Powertools' batch
 * processor runs them concurrently, and each record does its work under a lock of the client
 * package (`LockClient.using`) whose transport is the engine in-process (packages/engine/src/locker.ts): the
 * same code takes its locks over HTTP or by invoking the lock functions with another transport.
 * The answer is a partial batch response: only the records that failed go back to the queue (and,
 * after the queue's maxReceiveCount, to its dead-letter queue).
 *
 * Records of one batch often touch the same key. They share the container's one LocalLockTable, so
 * those that want the same lock queue in memory and only the first in line asks Elasticsearch;
 * without it they would all send acquires at once, all but one be refused, back off and try again.
 * Each lease ends before the function's deadline (`remainingTimeMs`: the Lambda context's remaining
 * time), so a function that times out never leaves a lock held past its own end.
 *
 * A record's body (JSON):
 *
 *   { "lock":  { "namespace": "orders", "granularity": "document", "ids": ["o-1"] },
 *     "write": { "id": "o-1", "document": { "status": "paid" } } }
 *
 * `lock` is an acquire request's target (namespace, granularity, ids | path, mode, ttlMs); `write`
 * is the work: one document indexed into WORK_INDEX with the grant's fencing token as its version
 * (the client package's fencedIndex), so a holder that lost its lease cannot overwrite a newer one.
 * The owner, the requestId and the work's idempotency key are the message id: a message delivered
 * again after its work completed gets the recorded result and does not write again; one delivered
 * while its first delivery still works waits for it (or fails back to the queue when the wait ends).
 *
 * Configuration (besides the lock functions' own): WORK_INDEX (default `locked-work`) and
 * RECORD_LOCK_WAIT_MS (default 5000, at most what the function timeout leaves: LOCK_MAX_WAIT_MS).
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { parse } from '@aws-lambda-powertools/parser';
import { JSONStringified } from '@aws-lambda-powertools/parser/helpers';
import { SqsRecordSchema } from '@aws-lambda-powertools/parser/schemas/sqs';
import { type AcquireBody, fencedIndex, GRANULARITY_NAMES, LocalLockTable, LockClient, type Locker } from '@es-lease-locks/client';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { z } from 'zod';
import { ConfigError } from '../../functions/runtime/config.js';
import { runtime } from '../../functions/runtime/runtime.js';
import { withOpaqueId } from '../../functions/store/correlation.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { toFieldIssues, ValidationError } from '../../packages/engine/src/index.js';
import { engineLocker } from '../../packages/engine/src/locker.js';

/** The shape of a record body; the engine checks the lock target itself (limits, paths, ids). */
export const recordBodySchema = z
  .object({
    lock: z
      .object({
        namespace: z.string(),
        granularity: z.enum(GRANULARITY_NAMES),
        ids: z.array(z.string()).optional(),
        path: z.string().optional(),
        mode: z.enum(['exclusive', 'shared']).optional(),
        ttlMs: z.number().int().optional(),
      })
      .strict(),
    write: z.object({ id: z.string().min(1).max(512), document: z.record(z.string(), z.unknown()) }).strict(),
  })
  .strict();

export type RecordBody = z.output<typeof recordBodySchema>;

export interface SqsConsumerOptions {
  /** How the locks are taken (the engine in-process: engineLocker; or httpTransport, invokeTransport) and the Elasticsearch client the work writes with. */
  store: () => Promise<{ locker: Locker; client: SearchClient }>;
  workIndex: string;
  /** How long a record waits for its lock: in the local queue and then in Elasticsearch, together. */
  waitMs: number;
  /** Shared by every record of every batch this container handles. Without one, every record asks Elasticsearch at once. */
  localTable?: LocalLockTable;
  logger?: Logger;
  metrics?: Metrics;
}

/**
 * A record as the parser's SQS record schema with the body as JSON of recordBodySchema. Not the batch
 * processor's parser option: it loads the schemas of every event type it supports as chunks that
 * the bundler would ship with every function (+29% per zip, measured); this imports only SQS's.
 */
const RecordSchema = SqsRecordSchema.extend({ body: JSONStringified(recordBodySchema) });

function readRecordBody(record: SQSRecord): RecordBody {
  const result = parse(record, undefined, RecordSchema, true);
  if (result.success) return (result.data as unknown as { body: RecordBody }).body;
  const cause = result.error.cause as z.core.$ZodIssue[] | z.ZodError | undefined;
  const issues = (Array.isArray(cause) ? cause : (cause?.issues ?? [])).map((issue) => ({
    ...issue,
    path: issue.path.slice(issue.path[0] === 'body' ? 1 : 0),
  }));
  let json: unknown;
  try {
    json = JSON.parse(record.body);
  } catch {
    throw new ValidationError({ fields: [{ field: 'body', rule: 'json', message: 'must be a JSON object' }] });
  }
  throw new ValidationError({ fields: toFieldIssues(new z.ZodError(issues as z.core.$ZodIssue[]), json) });
}

export function createSqsConsumer(options: SqsConsumerOptions): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  const { logger, metrics, localTable } = options;

  const processRecord = async (record: SQSRecord, context?: Context): Promise<void> => {
    try {
      const body = readRecordBody(record);
      const { locker, client } = await options.store();
      const locks = new LockClient({ transport: locker, ...(localTable ? { localTable } : {}) });
      const id = `sqs:${record.messageId}`;
      // Work under a shared lock cannot be taken on by one delivery: only exclusive work is run once.
      const once = body.lock.mode === 'shared' ? {} : { idempotencyKey: true as const };
      const request: AcquireBody = { ...body.lock, owner: id, requestId: id, waitMs: options.waitMs, ...once };
      // The lock index requests of this record carry its message id (X-Opaque-Id): Elasticsearch's logs name the record.
      await withOpaqueId(id, () =>
        locks.using(
          request,
          async (signal, lock) => {
            signal.throwIfAborted();
            const written = await fencedIndex(client, { index: options.workIndex, id: body.write.id, document: body.write.document, fencingToken: lock });
            return { written: written.id, fencingToken: written.fencingToken };
          },
          context?.getRemainingTimeInMillis ? { remainingTimeMs: () => context.getRemainingTimeInMillis() } : {},
        ),
      );
    } catch (error) {
      const { name, message } = error instanceof Error ? error : { name: 'Error', message: String(error) };
      logger?.warn('record failed', { messageId: record.messageId, error: name, reason: message });
      throw error;
    }
  };

  return async (event, context) => {
    if (context?.functionName) logger?.addContext(context);
    logger?.appendKeys({ operation: 'consume', invocation: 'sqs' });
    metrics?.captureColdStartMetric(context?.functionName);
    metrics?.addDimension('operation', 'consume');
    const started = performance.now();
    const queuedBefore = localTable?.stats().queued ?? 0;
    // A processor per batch: it keeps the batch's successes and failures, and batches must not share them.
    // Records whose body does not parse fail alone (back to the queue, then its dead-letter queue).
    const processor = new BatchProcessor(EventType.SQS);
    try {
      const response = await processPartialResponse(event, (record: SQSRecord) => processRecord(record, context), processor, {
        ...(context ? { context } : {}),
        processInParallel: true,
      });
      const failed = response.batchItemFailures.length;
      const queuedLocally = (localTable?.stats().queued ?? queuedBefore) - queuedBefore;
      metrics?.addMetric('RecordsProcessed', MetricUnit.Count, event.Records.length - failed);
      metrics?.addMetric('RecordsFailed', MetricUnit.Count, failed);
      metrics?.addMetric('RecordsQueuedLocally', MetricUnit.Count, queuedLocally);
      logger?.info('batch done', { records: event.Records.length, failed, queuedLocally, durationMs: Math.round(performance.now() - started) });
      return response as SQSBatchResponse;
    } catch (error) {
      // Every record failed: Powertools throws, and Lambda hands the whole batch back to the queue.
      metrics?.addMetric('RecordsFailed', MetricUnit.Count, event.Records.length);
      logger?.error('batch failed', { records: event.Records.length, cause: error as Error });
      throw error;
    } finally {
      metrics?.publishStoredMetrics();
      logger?.resetKeys();
    }
  };
}

const consumerEnvSchema = z
  .object({
    WORK_INDEX: z
      .string()
      .regex(/^[a-z0-9][a-z0-9._-]*$/, { error: 'must be a lowercase Elasticsearch index name' })
      .default('locked-work'),
    RECORD_LOCK_WAIT_MS: z.coerce.number().int().min(0).default(5_000),
  })
  .loose();

function readConsumerEnv(env: Record<string, string | undefined>, maxWaitMs: number): { workIndex: string; waitMs: number } {
  const blankless = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value.trim() !== ''));
  const parsed = consumerEnvSchema.safeParse(blankless);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  if (parsed.data.RECORD_LOCK_WAIT_MS > maxWaitMs)
    throw new ConfigError([
      `RECORD_LOCK_WAIT_MS (${parsed.data.RECORD_LOCK_WAIT_MS}) must be at most ${maxWaitMs} (what the function timeout leaves for waiting)`,
    ]);
  return { workIndex: parsed.data.WORK_INDEX, waitMs: parsed.data.RECORD_LOCK_WAIT_MS };
}

const rt = runtime();
const { workIndex, waitMs } = readConsumerEnv(process.env, rt.config.maxWaitMs);

/** The container's one local lock table: every record of every batch it handles queues in it. */
export const localTable = new LocalLockTable();

export const handler = createSqsConsumer({
  store: async () => {
    const { service, client } = await rt.engine();
    return { locker: engineLocker(service), client };
  },
  workIndex,
  waitMs,
  localTable,
  logger: rt.logger,
  metrics: rt.metrics,
});
