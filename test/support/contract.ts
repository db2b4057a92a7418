/**
 * The OpenAPI document as a checker: a response (status, headers, JSON body) is checked against the
 * document's response for that route and status, with Ajv (JSON Schema 2020-12, as OpenAPI 3.1 uses).
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import document from '../../functions/http/openapi.json' with { type: 'json' };

const ID = 'https://es-lease-locks.local/openapi.json';

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
ajv.addSchema({ ...document, $id: ID });

const compiled = new Map<string, ValidateFunction>();
function validatorFor(pointer: string): ValidateFunction {
  let validate = compiled.get(pointer);
  if (!validate) {
    validate = ajv.compile({ $ref: `${ID}#${pointer}` });
    compiled.set(pointer, validate);
  }
  return validate;
}

type Json = Record<string, unknown>;

function resolve(node: Json): Json {
  const ref = node.$ref;
  if (typeof ref !== 'string') return node;
  let target: unknown = document;
  for (const part of ref.replace(/^#\//, '').split('/')) target = (target as Json)[part];
  return resolve(target as Json);
}

function pointerOf(node: Json, fallback: string): string {
  return typeof node.$ref === 'string' ? node.$ref.replace(/^#/, '') : fallback;
}

const describe = (errors: ErrorObject[] | null | undefined): string[] =>
  (errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);

export interface ResponseLike {
  statusCode: number;
  headers?: Record<string, string | number | boolean> | Headers;
  body: unknown;
}

/** Problems of this response against the document (empty when it conforms). */
export function contractProblems(method: 'GET' | 'POST', path: string, response: ResponseLike): string[] {
  const operation = (document.paths as Record<string, Record<string, Json>>)[path]?.[method.toLowerCase()];
  if (!operation) return [`${method} ${path} is not in the OpenAPI document`];
  const responses = operation.responses as Record<string, Json>;
  const declared = responses[String(response.statusCode)];
  if (!declared) return [`${method} ${path} does not declare status ${response.statusCode} (declares ${Object.keys(responses).join(', ')})`];
  const problems: string[] = [];
  const spec = resolve(declared);
  const headerValue = (name: string): string | undefined => {
    const headers = response.headers;
    if (!headers) return undefined;
    if (headers instanceof Headers) return headers.get(name) ?? undefined;
    const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name.toLowerCase());
    return found ? String(found[1]) : undefined;
  };
  for (const [name, header] of Object.entries((spec.headers ?? {}) as Record<string, Json>)) {
    const resolved = resolve(header);
    const value = headerValue(name);
    if (value === undefined) {
      if (resolved.required) problems.push(`header ${name} is required`);
      continue;
    }
    const pattern = (resolved.schema as Json | undefined)?.pattern;
    if (typeof pattern === 'string' && !new RegExp(pattern).test(value)) problems.push(`header ${name}=${value} does not match ${pattern}`);
  }
  const content = (spec.content as Record<string, Json> | undefined)?.['application/json'];
  if (!content) return [...problems, `status ${response.statusCode} of ${method} ${path} declares no JSON body`];
  const contentType = headerValue('content-type');
  if (contentType !== undefined && !contentType.startsWith('application/json')) problems.push(`content-type is ${contentType}`);
  const schema = content.schema as Json;
  const validate = validatorFor(
    pointerOf(schema, `/paths/${path.replace(/\//g, '~1')}/${method.toLowerCase()}/responses/${response.statusCode}/content/application~1json/schema`),
  );
  if (!validate(response.body)) problems.push(...describe(validate.errors));
  return problems;
}

/** Problems of a request body against the operation's declared request body. */
export function requestProblems(method: 'GET' | 'POST', path: string, body: unknown): string[] {
  const operation = (document.paths as Record<string, Record<string, Json>>)[path]?.[method.toLowerCase()];
  const schema = ((operation?.requestBody as Json | undefined)?.content as Record<string, Json> | undefined)?.['application/json']?.schema as Json | undefined;
  if (!schema) return [`${method} ${path} declares no JSON request body`];
  const validate = validatorFor(pointerOf(schema, ''));
  return validate(body) ? [] : describe(validate.errors);
}

/** Problems of a value against a named component schema (direct-invocation results, request examples). */
export function schemaProblems(component: string, value: unknown): string[] {
  if (!(component in document.components.schemas)) return [`no component schema ${component}`];
  const validate = validatorFor(`/components/schemas/${component}`);
  return validate(value) ? [] : describe(validate.errors);
}

/** A Lambda proxy result as status, headers and parsed body. */
export function fromProxyResult(result: unknown): ResponseLike {
  const proxy = result as { statusCode: number; headers?: Record<string, string>; body?: string };
  return { statusCode: proxy.statusCode, headers: proxy.headers ?? {}, body: proxy.body ? JSON.parse(proxy.body) : undefined };
}

export const openapi = document;
