/**
 * What every lock function does around its one engine call: read the input from whatever invoked
 * it (HTTP API, EventBridge or a direct invocation: see events.ts), set up the correlation id, log
 * keys, metrics dimensions and a trace subsegment, and answer (HTTP response, or the plain result /
 * a thrown named error).
 */
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { type LockEngine, type LockRequests, queryInput, type RequestKind } from '../../packages/engine/src/index.js';
import { withOpaqueId } from '../store/index.js';
import type { Access } from './admission.js';
import { principalOf } from './authorization.js';
import { errorReply, failureMetric, invocationError } from './errors.js';
import { correlationIdOf, type Invocation, type InvocationKind, inputReader, invocationOf } from './events.js';
import { describePrincipal } from './lock-policy.js';
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
  /** The caller as the namespace policy names it (an IAM principal, `direct`, `eventbridge`), when known. */
  principal?: string;
}

/** The operations, by the kind of request they take. */
export type OperationName = keyof LockRequests;
/** The typed request of an operation (requests.ts builds it). */
export type RequestOf<K extends OperationName> = LockRequests[K] extends RequestKind<unknown, infer R> ? R : never;

export interface Operation<K extends OperationName, TResult, TBody> {
  name: K;
  /** GET routes read their input from the query string (the JSON body otherwise). */
  fromQuery?: boolean;
  describe?: (request: RequestOf<K>) => Scope;
  /** What the call touches, for the namespace policy and the quotas (admission.ts), checked before the engine runs. */
  access: (request: RequestOf<K>) => Access;
  run: (engine: LockEngine, request: RequestOf<K>, call: Call) => Promise<TResult>;
  present: (result: TResult) => TBody;
  /** The HTTP status of a success (200 unless said). */
  status?: (result: TResult) => number;
  /** Success metrics (the failure ones are common to all operations). */
  record?: (metrics: Metrics, result: TResult) => void;
  /** Log line on success; defaults to `${name} done`. */
  summary?: (result: TResult) => Record<string, unknown>;
  /** The level of that line: `warn` for an operator's break-glass call, so that it stands out in the logs (the audit trail). */
  level?: 'info' | 'warn';
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

export function lockHandler<K extends OperationName, TResult, TBody>(runtime: Runtime, operation: Operation<K, TResult, TBody>): LockHandler<TBody> {
  const { logger, metrics, tracer } = runtime;
  const kind = runtime.requests[operation.name];
  const reader = inputReader(kind.schema, operation.fromQuery ? { fromQuery: (query) => queryInput(query, kind) } : {});
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
    const principal = describePrincipal(principalOf(invocation));
    const call: Call = { kind, correlationId, ...(principal !== undefined ? { principal } : {}) };
    let scope: Scope = {};
    const started = performance.now();
    let engineMs: number | undefined;
    try {
      const input = reader.read(invocation);
      const { engine, requests } = await runtime.engine();
      // The store's own kind: its settings carry the token signing key a lease token is decoded with.
      const request = (requests[operation.name] as RequestKind<unknown, RequestOf<K>>).toRequest(input);
      scope = operation.describe?.(request) ?? {};
      logger.appendKeys(scope as Record<string, string>);
      metrics.addDimension('granularity', scope.granularity ?? 'all');
      await withOpaqueId(correlationId, () => runtime.admit(invocation, operation.access(request)));
      const engineStarted = performance.now();
      try {
        const result = await traced(tracer, operation.name, scope, () => withOpaqueId(correlationId, () => operation.run(engine, request, call)));
        engineMs = performance.now() - engineStarted;
        operation.record?.(metrics, result);
        const body = operation.present(result);
        logger[operation.level ?? 'info'](`${operation.name} done`, { durationMs: round(engineMs), ...(operation.summary?.(result) ?? {}) });
        return kind === 'http' ? jsonResponse(operation.status?.(result) ?? 200, body, { 'x-correlation-id': correlationId }) : body;
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
