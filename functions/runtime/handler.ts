/**
 * What every lock function does around its one engine call: tell an HTTP API event from a direct
 * invocation, validate the input with the Powertools parser, set up log keys, metrics dimensions
 * and a trace subsegment, and answer (HTTP response, or the plain result / a thrown named error).
 */
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { parse } from '@aws-lambda-powertools/parser';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { z } from 'zod';
import { LeaseLostError, LockContentionError, type LockEngine, LockHeldError, StoreUnavailableError, toFieldIssues, ValidationError } from '../core/index.js';
import { withOpaqueId } from '../store/index.js';
import { errorReply, invocationError } from './errors.js';
import type { Runtime } from './runtime.js';

export type InvocationKind = 'http' | 'eventbridge' | 'direct';

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
  /** The raw input of an HTTP API call (the JSON body by default). */
  fromHttp?: (request: HttpRequest) => unknown;
  describe?: (input: z.output<TSchema>) => Scope;
  run: (engine: LockEngine, input: z.output<TSchema>, call: Call) => Promise<TResult>;
  present: (result: TResult) => TBody;
  /** Success metrics (the failure ones are common to all operations). */
  record?: (metrics: Metrics, result: TResult) => void;
  /** Log line on success; defaults to `${name} done`. */
  summary?: (result: TResult) => Record<string, unknown>;
}

export interface HttpRequest {
  event: APIGatewayProxyEventV2;
  /** The parsed JSON body (throws ValidationError for a missing or unreadable body). */
  json(): unknown;
  query: URLSearchParams;
}

export type LockHandler<TBody> = (event: unknown, context?: Partial<Context>) => Promise<TBody | APIGatewayProxyStructuredResultV2>;

export function isHttpApiEvent(event: unknown): event is APIGatewayProxyEventV2 {
  const candidate = event as { version?: unknown; requestContext?: { http?: unknown } } | null;
  return typeof candidate === 'object' && candidate !== null && candidate.version === '2.0' && typeof candidate.requestContext?.http === 'object';
}

export function isEventBridgeEvent(event: unknown): event is { 'detail-type': string; source: string; detail: unknown; id?: string } {
  return typeof event === 'object' && event !== null && 'detail-type' in event && 'source' in event && 'detail' in event;
}

export function httpRequest(event: APIGatewayProxyEventV2): HttpRequest {
  return {
    event,
    json() {
      if (event.body === undefined || event.body === null || event.body === '') {
        throw new ValidationError(undefined, { fields: [{ field: '(body)', rule: 'required', message: 'a JSON object body is required' }] });
      }
      const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new ValidationError(undefined, { fields: [{ field: '(body)', rule: 'json', message: 'must be valid JSON' }] });
      }
    },
    query: new URLSearchParams(event.rawQueryString ?? ''),
  };
}

/** Validates with the Powertools parser; failures become ValidationError with one entry per field. */
export function validate<TSchema extends z.ZodType>(schema: TSchema, data: unknown): z.output<TSchema> {
  const result = parse(data, undefined, schema, true);
  if (result.success) return result.data as z.output<TSchema>;
  const issues = (result.error.cause ?? []) as z.core.$ZodIssue[];
  // The input lets the core tell a missing field (required) from one of the wrong type.
  throw new ValidationError(undefined, { fields: toFieldIssues(new z.ZodError(issues), data) });
}

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

export function correlationIdOf(event: unknown, context: Partial<Context> | undefined): string {
  if (isHttpApiEvent(event)) {
    const header = event.headers?.['x-correlation-id'];
    return header || event.requestContext.requestId || context?.awsRequestId || 'unknown';
  }
  const requestId = (event as { requestId?: unknown } | null)?.requestId;
  if (typeof requestId === 'string' && requestId) return requestId;
  if (isEventBridgeEvent(event) && event.id) return event.id;
  return context?.awsRequestId ?? 'unknown';
}

function failureMetric(metrics: Metrics, error: unknown): void {
  if (error instanceof LockHeldError) metrics.addMetric('LockConflict', MetricUnit.Count, 1);
  else if (error instanceof LeaseLostError) metrics.addMetric('LeaseLost', MetricUnit.Count, 1);
  else if (error instanceof StoreUnavailableError || error instanceof LockContentionError) metrics.addMetric('StoreUnavailable', MetricUnit.Count, 1);
  else if (error instanceof ValidationError) metrics.addMetric('InvalidRequest', MetricUnit.Count, 1);
  else metrics.addMetric('InternalError', MetricUnit.Count, 1);
}

let coldStart = true;

export function lockHandler<TSchema extends z.ZodType, TResult, TBody>(runtime: Runtime, operation: Operation<TSchema, TResult, TBody>): LockHandler<TBody> {
  const { logger, metrics, tracer } = runtime;
  return async (event, context) => {
    const kind: InvocationKind = isHttpApiEvent(event) ? 'http' : isEventBridgeEvent(event) ? 'eventbridge' : 'direct';
    const correlationId = correlationIdOf(event, context);
    if (context?.functionName) logger.addContext(context as Context);
    logger.appendKeys({ operation: operation.name, correlationId, invocation: kind });
    if (coldStart) {
      coldStart = false;
      metrics.captureColdStartMetric(context?.functionName);
      tracer.annotateColdStart();
    }
    metrics.addDimension('operation', operation.name);
    const call: Call = { kind, correlationId };
    let scope: Scope = {};
    const started = performance.now();
    let engineMs: number | undefined;
    try {
      const raw =
        kind === 'http'
          ? (operation.fromHttp ?? ((request) => request.json()))(httpRequest(event as APIGatewayProxyEventV2))
          : kind === 'eventbridge'
            ? (event as { detail: unknown }).detail
            : event;
      const input = validate(operation.schema, raw);
      scope = operation.describe?.(input) ?? {};
      logger.appendKeys(scope as Record<string, string>);
      metrics.addDimension('granularity', scope.granularity ?? 'all');
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
