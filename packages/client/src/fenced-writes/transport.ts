/**
 * The user's own search client, typed by shape: `@elastic/elasticsearch` (v8, v9) or
 * `@opensearch-project/opensearch`, from either module entry (ESM or CommonJS, whose classes
 * differ), or anything else with the same `transport.request`. Only that lowest common call is
 * used, and answers and errors are read by what they carry, never by `instanceof`:
 *
 * - Elasticsearch's transport returns the body unless `meta: true`, then `{ body, statusCode, headers }`;
 *   OpenSearch's always returns `{ body, statusCode, headers }` (and ignores `meta`).
 * - An error status throws; Elasticsearch's error has `meta.statusCode` and `meta.body`, OpenSearch's
 *   also `statusCode` and `body`.
 * - `asStream: true` (both) hands back the raw body and skips the status check: reads go that way,
 *   so that `_version` (a JSON number, and fencing tokens pass 2^53) is read exactly.
 */
import { gunzipSync, inflateSync } from 'node:zlib';

/** What a fenced write sends through `transport.request`. */
export interface FencedTransportParams {
  method: string;
  path: string;
  querystring?: Record<string, string>;
  body?: Record<string, unknown>;
  /** NDJSON, ready to send: both clients pass a string through as it is. */
  bulkBody?: string;
}

export interface FencedTransportOptions {
  meta?: boolean;
  asStream?: boolean;
}

/**
 * The user's Elasticsearch or OpenSearch client, as far as fenced writes use it: an `@elastic/elasticsearch`
 * `Client`, an `@opensearch-project/opensearch` `Client`, or anything with the same `transport.request`.
 */
export interface FencedWritesClient {
  readonly transport: {
    request(params: FencedTransportParams, options?: FencedTransportOptions): Promise<unknown>;
  };
}

export interface Answer {
  statusCode: number | undefined;
  body: unknown;
  headers: Record<string, unknown>;
}

const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** A transport's result as `{ statusCode, body, headers }`, whichever shape it came in. */
function answerOf(result: unknown): Answer {
  const record = asRecord(result);
  if (record && 'body' in record && typeof record.statusCode === 'number') {
    return { statusCode: record.statusCode, body: record.body, headers: asRecord(record.headers) ?? {} };
  }
  return { statusCode: undefined, body: result, headers: {} };
}

/** Sends one request; a failure is the client's own error, untouched. */
export async function send(client: FencedWritesClient, params: FencedTransportParams): Promise<Answer> {
  return answerOf(await client.transport.request(params, { meta: true }));
}

/** The status and error body of a client's error that is an answer of the server (else undefined). */
export function failureOf(error: unknown): { statusCode: number | undefined; type: string | undefined; reason: string | undefined } | undefined {
  const carried = asRecord(error);
  if (!carried) return undefined;
  const meta = asRecord(carried.meta);
  const statusCode = [meta?.statusCode, carried.statusCode].find((status): status is number => typeof status === 'number');
  const body = asRecord(meta?.body ?? carried.body);
  const detail = asRecord(body?.error);
  if (statusCode === undefined && !detail) return undefined;
  return {
    statusCode,
    type: typeof detail?.type === 'string' ? detail.type : undefined,
    reason: typeof detail?.reason === 'string' ? detail.reason : typeof body?.error === 'string' ? body.error : undefined,
  };
}

/** Whether the server refused the write as a version conflict: a newer fencing token is there. */
export const isConflict = (failure: { statusCode?: number | undefined; type?: string | undefined } | undefined): boolean =>
  failure?.statusCode === 409 || failure?.type === 'version_conflict_engine_exception';

/** The document's token in a conflict's reason: "current version [X] is higher than the one provided [Y]" (or "higher or equal to"). */
export function currentTokenIn(reason: string | undefined): string | undefined {
  return reason?.match(/current version \[(\d+)\]/)?.[1];
}

/** One document as a realtime read saw it. `version` is exact (a decimal string), undefined when absent or not known exactly. */
export interface StoredDocument {
  found: boolean;
  version: string | undefined;
  source: unknown;
  hasSource: boolean;
  /** Set when the read of this document failed (a `_mget` item). */
  error?: { type: string | undefined; reason: string | undefined };
}

async function textOf(body: unknown, headers: Record<string, unknown>): Promise<string> {
  let bytes: Buffer;
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) bytes = body;
  else {
    const chunks: Buffer[] = [];
    for await (const chunk of body as AsyncIterable<Buffer | string>) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    bytes = Buffer.concat(chunks);
  }
  // A client made with `compression: true` (Elastic Cloud's default) asks for gzip; the raw body is as it came.
  const encoding = String(headers['content-encoding'] ?? '').toLowerCase();
  if (encoding.includes('gzip')) bytes = gunzipSync(bytes);
  else if (encoding.includes('deflate')) bytes = inflateSync(bytes);
  return bytes.toString('utf8');
}

/**
 * JSON.parse that also keeps every `_version` exactly: as the number's source text where the runtime
 * gives it (Node.js 21 and later), else as the number when it is a safe integer.
 */
function parseKeepingVersions(text: string): { value: unknown; versions: WeakMap<object, string> } {
  const versions = new WeakMap<object, string>();
  const value: unknown = JSON.parse(text, function (this: unknown, key: string, parsed: unknown, context?: { source?: string }) {
    if (key === '_version' && typeof parsed === 'number' && typeof this === 'object' && this !== null) {
      const exact = context?.source ?? (Number.isSafeInteger(parsed) ? String(parsed) : undefined);
      if (exact !== undefined) versions.set(this, exact);
    }
    return parsed;
  } as (this: unknown, key: string, value: unknown) => unknown);
  return { value, versions };
}

function storedDocument(doc: unknown, versions: WeakMap<object, string>): StoredDocument {
  const record = asRecord(doc) ?? {};
  const error = asRecord(record.error);
  if (error) {
    return {
      found: false,
      version: undefined,
      source: undefined,
      hasSource: false,
      error: { type: typeof error.type === 'string' ? error.type : undefined, reason: typeof error.reason === 'string' ? error.reason : undefined },
    };
  }
  const found = record.found === true;
  const version = found ? (versions.get(record) ?? (Number.isSafeInteger(record._version) ? String(record._version) : undefined)) : undefined;
  return { found, version, source: record._source, hasSource: found && '_source' in record };
}

/**
 * A read whose answer must keep `_version` exact: the raw body, parsed here. An error status is sent
 * once more the ordinary way, so that the failure reaches the caller as the client's own error.
 */
async function readExactly(
  client: FencedWritesClient,
  params: () => FencedTransportParams,
  absentIsAnswer: boolean,
): Promise<ReturnType<typeof parseKeepingVersions>> {
  const raw = answerOf(await client.transport.request(params(), { meta: true, asStream: true }));
  const unparsed =
    typeof raw.body === 'string' || Buffer.isBuffer(raw.body) || (typeof raw.body === 'object' && raw.body !== null && Symbol.asyncIterator in raw.body);
  // A transport that ignored asStream has parsed the body itself (versions past 2^53 are then not exact).
  if (!unparsed) return { value: raw.body, versions: new WeakMap() };
  const text = await textOf(raw.body, raw.headers);
  const status = raw.statusCode ?? 200;
  if (status < 300) return parseKeepingVersions(text);
  if (absentIsAnswer && status === 404) {
    const parsed = parseKeepingVersions(text);
    if (asRecord(parsed.value)?.found === false) return parsed;
  }
  const ordinary = await send(client, params());
  return { value: ordinary.body, versions: new WeakMap() };
}

export interface DocumentAddress {
  index: string;
  id: string;
  routing?: string | undefined;
}

export const documentPath = (target: DocumentAddress): string => `/${encodeURIComponent(target.index)}/_doc/${encodeURIComponent(target.id)}`;

/** A realtime GET of one document (its failures are the client's own errors). */
export async function readDocument(client: FencedWritesClient, target: DocumentAddress): Promise<StoredDocument> {
  const { value, versions } = await readExactly(
    client,
    () => ({
      method: 'GET',
      path: documentPath(target),
      querystring: { realtime: 'true', ...(target.routing === undefined ? {} : { routing: target.routing }) },
    }),
    true,
  );
  return storedDocument(value, versions);
}

/** A realtime `_mget` of several documents, one answer per target in order (a document's own failure in its `error`). */
export async function readDocuments(client: FencedWritesClient, targets: DocumentAddress[]): Promise<StoredDocument[]> {
  if (targets.length === 0) return [];
  const docs = targets.map((target) => ({ _index: target.index, _id: target.id, ...(target.routing === undefined ? {} : { routing: target.routing }) }));
  const { value, versions } = await readExactly(client, () => ({ method: 'POST', path: '/_mget', querystring: { realtime: 'true' }, body: { docs } }), false);
  const answered = asRecord(value)?.docs;
  if (!Array.isArray(answered) || answered.length !== targets.length) {
    throw new Error(`_mget answered ${Array.isArray(answered) ? answered.length : 'no'} documents for the ${targets.length} asked`);
  }
  return answered.map((doc) => storedDocument(doc, versions));
}
