/**
 * What every lock function does around its one engine call: read the input from whatever invoked
 * it (HTTP API, EventBridge or a direct invocation: see events.ts), set up the correlation id, log
 * keys, metrics dimensions and a trace subsegment, and answer (HTTP response, or the plain result /
 * a thrown named error).
 */
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { z } from 'zod';
import {
  AccessDeniedError,
  LeaseLostError,
  LockContentionError,
  type LockEngine,
  LockHeldError,
  QuotaExceededError,
  StoreUnavailableError,
  ValidationError,
} from '../core/index.js';
import { withOpaqueId } from '../store/index.js';
import type { Access } from './admission.js';
import { errorReply, invocationError } from './errors.js';
import { correlationIdOf, type Invocation, type InvocationKind, inputReader, invocationOf } from './events.js';
import type { Runtime } from './runtime.js';

export type { InvocationKind } from './events.js';

/** What the logs and metrics say about a call: filled in as soon as the input is known. */
export interface Scope {
  namespace?: string;
  granularity?: string;
  key?: string;
  requestId?: string;
}

export interface Call {
  kind: InvocationKind;
  correlationId: string;
}

export interface Operation<TSchema extends z.ZodType, TResult, TBody> {
  name: string;
  schema: TSchema;
  /** For GET routes: the raw input from the query string (the JSON body by default). */
  fromQuery?: (query: URLSearchParams) => unknown;
  describe?: (input: z.output<TSchema>) => Scope;
  /** What the call touches, for the namespace policy and the quotas (admission.ts), checked before the engine runs. */
  access: (input: z.output<TSchema>) => Access;
  run: (engine: LockEngine, input: z.output<TSchema>, call: Call) => Promise<TResult>;
  present: (result: TResult) => TBody;
  /** Success metrics (the failure ones are common to all operations). */
  record?: (metrics: Metrics, result: TResult) => void;
  /** Log line on success; defaults to `${name} done`. */
  summary?: (result: TResult) => Record<string, unknown>;
}

export type LockHandler<TBody> = (event: unknown, context?: Partial<Context>) => Promise<TBody | APIGatewayProxyStructuredResultV2>;

/** A subsegment around the engine call when tracing is on; the call alone otherwise. */
export async function traced<T>(tracer: Tracer, name: string, scope: Scope, work: () => Promise<T>): Promise<T> {
  const parent = tracer.isTracingEnabled() ? tracer.getSegment() : undefined;
  if (!parent) return work();
  const subsegment = parent.addNewSubsegment(`## lock.${name}`);
  tracer.setSegment(subsegment);
  try {
    if (scope.granularity) subsegment.addAnnotation('granularity', scope.granularity);
    if (scope.namespace) subsegment.addAnnotation('namespace', scope.namespace);
    return await work();
  } catch (error) {
    subsegment.addError(error as Error);
    throw error;
  } finally {
    subsegment.close();
    tracer.setSegment(parent);
  }
}

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyStructuredResultV2 {
  return { statusCode, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/**
 * Sets the logger's correlation id (Powertools' `correlation_id` key) for this call, from the event
 * (see correlationIdOf) or else the Lambda request id, and answers it: it goes back in the
 * `x-correlation-id` header and to Elasticsearch as X-Opaque-Id.
 */
export function correlate(logger: Runtime['logger'], invocation: Invocation, context: Partial<Context> | undefined): string {
  const correlationId = correlationIdOf(invocation) ?? context?.awsRequestId ?? 'unknown';
  logger.setCorrelationId(correlationId);
  return correlationId;
}

function failureMetric(metrics: Metrics, error: unknown): void {
  if (error instanceof LockHeldError) metrics.addMetric('LockConflict', MetricUnit.Count, 1);
  else if (error instanceof LeaseLostError) metrics.addMetric('LeaseLost', MetricUnit.Count, 1);
  else if (error instanceof StoreUnavailableError || error instanceof LockContentionError) metrics.addMetric('StoreUnavailable', MetricUnit.Count, 1);
  else if (error instanceof ValidationError) metrics.addMetric('InvalidRequest', MetricUnit.Count, 1);
  else if (error instanceof AccessDeniedError) metrics.addMetric('AccessDenied', MetricUnit.Count, 1);
  else if (error instanceof QuotaExceededError) metrics.addMetric('QuotaExceeded', MetricUnit.Count, 1);
  else metrics.addMetric('InternalError', MetricUnit.Count, 1);
}

export function lockHandler<TSchema extends z.ZodType, TResult, TBody>(runtime: Runtime, operation: Operation<TSchema, TResult, TBody>): LockHandler<TBody> {
  const { logger, metrics, tracer } = runtime;
  const reader = inputReader(operation.schema, operation.fromQuery ? { fromQuery: operation.fromQuery } : {});
  return async (event, context) => {
    const invocation = invocationOf(event);
    const { kind } = invocation;
    if (context?.functionName) logger.addContext(context as Context);
    const correlationId = correlate(logger, invocation, context);
    logger.appendKeys({ operation: operation.name, invocation: kind });
    // Both count only the container's first call.
    metrics.captureColdStartMetric(context?.functionName);
    tracer.annotateColdStart();
    metrics.addDimension('operation', operation.name);
    const call: Call = { kind, correlationId };
    let scope: Scope = {};
    const started = performance.now();
    let engineMs: number | undefined;
    try {
      const input = reader.read(invocation);
      scope = operation.describe?.(input) ?? {};
      logger.appendKeys(scope as Record<string, string>);
      metrics.addDimension('granularity', scope.granularity ?? 'all');
      await withOpaqueId(correlationId, () => runtime.admit(invocation, operation.access(input)));
      const { engine } = await runtime.store();
      const engineStarted = performance.now();
      try {
        const result = await traced(tracer, operation.name, scope, () => withOpaqueId(correlationId, () => operation.run(engine, input, call)));
        engineMs = performance.now() - engineStarted;
        operation.record?.(metrics, result);
        const body = operation.present(result);
        logger.info(`${operation.name} done`, { durationMs: round(engineMs), ...(operation.summary?.(result) ?? {}) });
        return kind === 'http' ? jsonResponse(200, body, { 'x-correlation-id': correlationId }) : body;
      } finally {
        engineMs ??= performance.now() - engineStarted;
        metrics.addMetric('EngineLatency', MetricUnit.Milliseconds, engineMs);
      }
    } catch (error) {
      if (scope.granularity === undefined) metrics.addDimension('granularity', 'unknown');
      failureMetric(metrics, error);
      const reply = errorReply(error, correlationId);
      const details = { status: reply.statusCode, error: reply.body.error, durationMs: round(performance.now() - started) };
      if (reply.level === 'error') logger.error(`${operation.name} failed`, { ...details, cause: error as Error });
      else if (reply.level === 'warn') logger.warn(`${operation.name} refused`, { ...details, reason: (error as Error).message });
      else logger.info(`${operation.name} refused`, { ...details, reason: reply.body.message });
      if (kind === 'http') return jsonResponse(reply.statusCode, reply.body, { ...reply.headers, 'x-correlation-id': correlationId });
      throw invocationError(error, correlationId);
    } finally {
      metrics.publishStoredMetrics();
      logger.resetKeys();
    }
  };
}

const round = (ms: number): number => Math.round(ms * 100) / 100;

/** Direct invocation types for callers (Step Functions, SDK): the plain body, never an HTTP response. */
export type DirectResult<T> = T extends LockHandler<infer B> ? B : never;
