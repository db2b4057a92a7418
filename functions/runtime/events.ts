/**
 * What invoked a function and what it asked for, read the Powertools parser's way: its event
 * schemas tell an HTTP API call from an EventBridge event from a direct invocation, and take the
 * operation's input out of them (the JSON body through `JSONStringified`, the `detail` through the
 * EventBridge envelope). Validation failures become one ValidationError whose fields are named as
 * the caller wrote them.
 *
 * HTTP API events are read with the parser's API Gateway v2 schema cut down to the fields we use,
 * not with its envelope: the envelope validates the whole event, and the emulators people develop
 * with do not fill it the way API Gateway does (serverless-offline sends `queryStringParameters:
 * null`, `body: null` and an authorizer without claims), so every local call would fail.
 */
import { parse } from '@aws-lambda-powertools/parser';
import { EventBridgeEnvelope } from '@aws-lambda-powertools/parser/envelopes/eventbridge';
import { JSONStringified } from '@aws-lambda-powertools/parser/helpers';
import { APIGatewayProxyEventV2Schema } from '@aws-lambda-powertools/parser/schemas/api-gatewayv2';
import { EventBridgeSchema } from '@aws-lambda-powertools/parser/schemas/eventbridge';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { z } from 'zod';
import { toFieldIssues, ValidationError } from '../core/index.js';

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
 * Where the logger finds the correlation id (JMESPath, searched by the Logger's correlation-id
 * support): a caller's own `x-correlation-id` header, else API Gateway's request id; the
 * EventBridge event id; a direct caller's `requestId`. Without one, the Lambda request id.
 */
export const CORRELATION_PATHS: Readonly<Record<InvocationKind, string>> = Object.freeze({
  http: 'headers."x-correlation-id" || requestContext.requestId',
  eventbridge: 'id',
  direct: 'requestId',
});

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
  return {
    read(invocation) {
      if (invocation.kind === 'eventbridge') return settled(parse(invocation.event, EventBridgeEnvelope, schema, true), 'detail', invocation.event.detail);
      if (invocation.kind === 'direct') return settled(parse(invocation.event, undefined, schema, true), undefined, invocation.event);
      const { event } = invocation;
      if (source.fromQuery) {
        const raw = source.fromQuery(new URLSearchParams(event.rawQueryString ?? ''));
        return settled(parse(raw, undefined, schema, true), undefined, raw);
      }
      if (event.body === undefined || event.body === null || event.body === '') {
        throw new ValidationError(undefined, { fields: [{ field: '(body)', rule: 'required', message: 'a JSON object body is required' }] });
      }
      // The envelope reads `body` as text: a binary-flagged body is decoded first.
      const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
      const plain = event.isBase64Encoded ? { ...event, body: text, isBase64Encoded: false } : event;
      const result = parse(plain, undefined, httpBody, true);
      if (result.success) return (result.data as unknown as { body: z.output<TSchema> }).body;
      const json = parsedJson(text);
      if (json === NOT_JSON) throw new ValidationError(undefined, { fields: [{ field: '(body)', rule: 'json', message: 'must be valid JSON' }] });
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
  throw new ValidationError(undefined, { fields: toFieldIssues(new z.ZodError(issues as z.core.$ZodIssue[]), payload) });
}

const NOT_JSON = Symbol('not JSON');

function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}
