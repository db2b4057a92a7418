/**
 * What invoked a function and what it asked for, read with the Powertools parser's event schemas:
 * they tell an HTTP API call from an EventBridge event from a direct invocation, and, extended with
 * the operation's schema (the body through `JSONStringified`, the `detail` as it is), take the
 * input out. Validation failures become one ValidationError whose fields are named as the caller
 * wrote them.
 *
 * Why extended schemas and not the parser's envelopes, which do the same: the envelopes module
 * loads every event schema the parser has (about 30 ms more init per cold start, measured), and
 * the API Gateway envelope validates the whole event, which the emulators people develop with do
 * not fill the way API Gateway does (serverless-offline sends `queryStringParameters: null`,
 * `body: null` and an authorizer without claims), so every local call would fail. The HTTP API
 * schema is cut down to the fields a lock function reads.
 */
import { parse } from '@aws-lambda-powertools/parser';
import { JSONStringified } from '@aws-lambda-powertools/parser/helpers';
import { APIGatewayProxyEventV2Schema } from '@aws-lambda-powertools/parser/schemas/api-gatewayv2';
import { EventBridgeSchema } from '@aws-lambda-powertools/parser/schemas/eventbridge';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { z } from 'zod';
import { toFieldIssues, ValidationError } from '../../packages/engine/src/index.js';

/** The parts of an API Gateway v2 (HTTP API) event a lock function reads. */
const HttpApiEventSchema = APIGatewayProxyEventV2Schema.pick({
  version: true,
  routeKey: true,
  rawPath: true,
  rawQueryString: true,
  headers: true,
  body: true,
  isBase64Encoded: true,
}).extend({
  version: z.literal('2.0'),
  // serverless-offline sends null for a GET's missing body.
  body: z.string().nullish(),
  requestContext: APIGatewayProxyEventV2Schema.shape.requestContext.pick({ requestId: true, routeKey: true, stage: true }),
});

export type InvocationKind = 'http' | 'eventbridge' | 'direct';

export type Invocation =
  | { kind: 'http'; event: APIGatewayProxyEventV2 }
  | { kind: 'eventbridge'; event: { id: string; detail: unknown } }
  | { kind: 'direct'; event: unknown };

export function invocationOf(event: unknown): Invocation {
  if (HttpApiEventSchema.safeParse(event).success) return { kind: 'http', event: event as APIGatewayProxyEventV2 };
  if (EventBridgeSchema.safeParse(event).success) return { kind: 'eventbridge', event: event as { id: string; detail: unknown } };
  return { kind: 'direct', event };
}

/**
 * The id that ties a call's log lines, answer and Elasticsearch requests together: a caller's own
 * `x-correlation-id` header, else API Gateway's request id; the EventBridge event id; a direct
 * caller's `requestId` field. Undefined when the event has none (the Lambda request id is used).
 */
export function correlationIdOf(invocation: Invocation): string | undefined {
  if (invocation.kind === 'http') return invocation.event.headers?.['x-correlation-id'] || invocation.event.requestContext.requestId || undefined;
  if (invocation.kind === 'eventbridge') return invocation.event.id || undefined;
  const requestId = (invocation.event as { requestId?: unknown } | null)?.requestId;
  return typeof requestId === 'string' && requestId !== '' ? requestId : undefined;
}

/** Reads an operation's input from any invocation; built once per function. */
export interface InputReader<T> {
  read(invocation: Invocation): T;
}

export interface InputSource {
  /** For GET routes: the raw input from the query string (the JSON body otherwise). */
  fromQuery?: (query: URLSearchParams) => unknown;
}

export function inputReader<TSchema extends z.ZodType>(schema: TSchema, source: InputSource = {}): InputReader<z.output<TSchema>> {
  const httpBody = HttpApiEventSchema.extend({ body: JSONStringified(schema) });
  const eventBridgeDetail = EventBridgeSchema.extend({ detail: schema });
  return {
    read(invocation) {
      if (invocation.kind === 'eventbridge') {
        const result = parse(invocation.event, undefined, eventBridgeDetail, true);
        return result.success ? (result.data as unknown as { detail: z.output<TSchema> }).detail : settled(result, 'detail', invocation.event.detail);
      }
      if (invocation.kind === 'direct') return settled(parse(invocation.event, undefined, schema, true), undefined, invocation.event);
      const { event } = invocation;
      if (source.fromQuery) {
        const raw = source.fromQuery(new URLSearchParams(event.rawQueryString ?? ''));
        return settled(parse(raw, undefined, schema, true), undefined, raw);
      }
      if (event.body === undefined || event.body === null || event.body === '') {
        throw new ValidationError({ fields: [{ field: '(body)', rule: 'required', message: 'a JSON object body is required' }] });
      }
      // The envelope reads `body` as text: a binary-flagged body is decoded first.
      const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
      const plain = event.isBase64Encoded ? { ...event, body: text, isBase64Encoded: false } : event;
      const result = parse(plain, undefined, httpBody, true);
      if (result.success) return (result.data as unknown as { body: z.output<TSchema> }).body;
      const json = parsedJson(text);
      if (json === NOT_JSON) throw new ValidationError({ fields: [{ field: '(body)', rule: 'json', message: 'must be valid JSON' }] });
      return settled(result, 'body', json);
    },
  };
}

type Parsed = { success: true; data: unknown } | { success: false; error: Error };

/** The data, or a ValidationError naming fields relative to the payload (the envelope's `body.` / `detail.` taken off). */
function settled<T>(result: Parsed, envelopeField: string | undefined, payload: unknown): T {
  if (result.success) return result.data as T;
  const cause = result.error.cause as z.ZodError | z.core.$ZodIssue[] | undefined;
  const issues = (Array.isArray(cause) ? cause : (cause?.issues ?? [])).map((issue) =>
    envelopeField !== undefined && issue.path[0] === envelopeField ? { ...issue, path: issue.path.slice(1) } : issue,
  );
  // The payload lets the core tell a missing field (required) from one of the wrong type.
  throw new ValidationError({ fields: toFieldIssues(new z.ZodError(issues as z.core.$ZodIssue[]), payload) });
}

const NOT_JSON = Symbol('not JSON');

function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}
