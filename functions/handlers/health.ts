/**
 * GET /health: 200 when the lock store (Elasticsearch or OpenSearch) answers and the lock index is there, 503 otherwise. The
 * load-test kit's k6 setup() calls it before it starts. Also answers a direct invocation.
 */
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { ERRORS } from '../../packages/client/src/wire.js';
import { errorReply } from '../runtime/errors.js';
import { invocationOf } from '../runtime/events.js';
import { correlate, jsonResponse } from '../runtime/handler.js';
import { runtime } from '../runtime/runtime.js';

const rt = runtime();

export interface HealthBody {
  status: 'ok';
  store: { product: 'elasticsearch' | 'opensearch'; status: string; timedOut: boolean };
  /** Deprecated: `store`'s health under its name from before OpenSearch (whichever product answers). */
  elasticsearch: { status: string; timedOut: boolean };
  index: string;
}

export async function handler(event: unknown, context?: Partial<Context>): Promise<HealthBody | APIGatewayProxyStructuredResultV2> {
  const invocation = invocationOf(event);
  const http = invocation.kind === 'http';
  const correlationId = correlate(rt.logger, invocation, context);
  try {
    // The client alone: a health check must not create the lock index (LOCK_ENSURE_INDEX) as a side effect.
    const client = await rt.client();
    const health = await client.cluster.health(
      { index: rt.config.lockIndex, timeout: '1s' },
      { requestTimeout: Math.min(rt.config.store.requestTimeoutMs, 2_500) },
    );
    if (health.status === 'red') throw Object.assign(new Error(`lock index ${rt.config.lockIndex} is red`), { red: true });
    const cluster = { status: health.status, timedOut: health.timed_out };
    const body: HealthBody = { status: 'ok', store: { product: rt.config.store.product, ...cluster }, elasticsearch: cluster, index: rt.config.lockIndex };
    return http ? jsonResponse(200, body, { 'x-correlation-id': correlationId }) : body;
  } catch (error) {
    rt.logger.warn('health check failed', { reason: (error as Error).message });
    const reply = errorReply(error);
    // Whatever went wrong, a health check answers that the store is unavailable (the catalogue's status and retryability).
    const unavailable = ERRORS.StoreUnavailableError;
    const body = {
      error: 'StoreUnavailableError',
      message: reply.statusCode === unavailable.status ? reply.body.message : 'The lock store or the lock index is not ready.',
      retryable: unavailable.retryable,
      status: 'unavailable',
    };
    if (http) return jsonResponse(unavailable.status, body, { 'Retry-After': '1', 'x-correlation-id': correlationId });
    throw Object.assign(new Error(body.message), { name: 'StoreUnavailableError' });
  } finally {
    rt.logger.resetKeys();
  }
}
