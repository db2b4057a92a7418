/**
 * Your Elasticsearch indices in memory, for testing the fenced-write helpers (fencedIndex,
 * fencedCreate, fencedUpdate, fencedDelete, fencedBulk) without a cluster. It answers the requests
 * those helpers send (`transport.request`, as `@elastic/elasticsearch` and OpenSearch's client
 * take them) as Elasticsearch does, and keeps what the fence rests on as Elasticsearch keeps it:
 *
 * - a document's external version is exact (a decimal integer of any length, never a float), and a
 *   write with `version_type=external_gte` is refused (409 `version_conflict_engine_exception`,
 *   naming both versions) when the stored version is higher;
 * - a tombstone is an ordinary document, so it keeps fencing; a real delete is forgotten at once
 *   (as with `index.gc_deletes: 0s`), which is why the helpers write tombstones;
 * - reads are realtime; a missing index is created by the first write to it, and a read or a
 *   search of one that is not there fails with 404 `index_not_found_exception`, thrown as the
 *   client throws it (`name: 'ResponseError'`, `meta.statusCode`, `meta.body`).
 *
 * Searches understand enough of the query DSL for tests: `bool` (filter, must, must_not, should),
 * `exists`, `ids`, `term`, `terms`, `match_all`. It is checked against a real node by the same test
 * file as the helpers (test/client/fenced-writes.test.ts).
 */

import type { FencedTransportOptions, FencedTransportParams } from '@es-lease-locks/client';

type Json = Record<string, unknown>;

interface StoredDoc {
  version: bigint;
  source: Json;
}

/** A document as the in-memory index holds it: its exact version (decimal string) and source. */
export interface MemoryDocument {
  version: string;
  source: Record<string, unknown>;
}

/** The error the search clients throw for an error status: read by shape (meta.statusCode, meta.body). */
class ResponseError extends Error {
  override readonly name = 'ResponseError';
  readonly meta: { statusCode: number; body: Json; headers: Json };
  readonly statusCode: number;
  readonly body: Json;
  constructor(statusCode: number, type: string, reason: string) {
    super(`${type}: ${reason}`);
    this.body = { error: { type, reason }, status: statusCode };
    this.statusCode = statusCode;
    this.meta = { statusCode, body: this.body, headers: {} };
  }
}

const conflict = (id: string, current: bigint, provided: bigint): ResponseError =>
  new ResponseError(
    409,
    'version_conflict_engine_exception',
    `[${id}]: version conflict, current version [${current}] is higher than the one provided [${provided}]`,
  );
const missingIndex = (index: string): ResponseError => new ResponseError(404, 'index_not_found_exception', `no such index [${index}]`);

export class MemorySearchIndex {
  readonly #indices = new Map<string, Map<string, StoredDoc>>();
  /** How many requests came in, by `METHOD path-kind` (e.g. `PUT _doc`, `POST _bulk`): what a test may count. */
  readonly requests: string[] = [];

  /** The client's shape the fenced-write helpers take (FencedWritesClient). */
  readonly transport: { request: (params: FencedTransportParams, options?: FencedTransportOptions) => Promise<unknown> } = {
    request: async (params, options = {}) => this.#answer(params, options),
  };

  /** A document as stored now (tombstones too), or undefined. */
  document(index: string, id: string): MemoryDocument | undefined {
    const doc = this.#indices.get(index)?.get(id);
    return doc ? { version: String(doc.version), source: structuredClone(doc.source) } : undefined;
  }

  async close(): Promise<void> {}

  async #answer(params: FencedTransportParams, options: FencedTransportOptions): Promise<unknown> {
    const [index, kind, id] = params.path.split('/').filter(Boolean).map(decodeURIComponent) as [string, string?, string?];
    this.requests.push(`${params.method} ${index?.startsWith('_') ? index : (kind ?? 'index')}`);
    const reply = (statusCode: number, body: Json, raw?: string): unknown => {
      if (options.asStream) return { statusCode, body: raw ?? JSON.stringify(body), headers: {} };
      if (statusCode >= 300) throw new ResponseError(statusCode, String((body.error as Json | undefined)?.type ?? 'error'), JSON.stringify(body));
      return options.meta ? { statusCode, body, headers: {} } : body;
    };
    if (index === '_mget') return reply(200, {}, this.#mget(params.body as { docs: Array<{ _index: string; _id: string }> }));
    if (index === '_bulk') return reply(200, this.#bulk(params.bulkBody ?? ''));
    if (kind === undefined) {
      if (params.method === 'PUT') this.#indices.set(index, this.#indices.get(index) ?? new Map());
      else if (params.method === 'DELETE') this.#indices.delete(index);
      return reply(200, { acknowledged: true });
    }
    if (kind === '_search') return reply(200, this.#search(index, params.body ?? {}));
    if (kind === '_refresh') return reply(200, { _shards: { failed: 0 } });
    if (kind !== '_doc' || id === undefined)
      throw new ResponseError(400, 'illegal_argument_exception', `${params.method} ${params.path} is not served in memory`);
    if (params.method === 'GET') {
      const docs = this.#indices.get(index);
      if (!docs) {
        if (options.asStream) return reply(404, {}, JSON.stringify({ error: { type: 'index_not_found_exception' }, status: 404 }));
        throw missingIndex(index);
      }
      const text = this.#getText(index, id);
      return options.asStream ? reply(docs.has(id) ? 200 : 404, {}, text) : reply(docs.has(id) ? 200 : 404, JSON.parse(text) as Json);
    }
    const version = parseVersion(params.querystring);
    if (params.method === 'PUT' || params.method === 'POST') {
      const result = this.#write(index, id, version, params.body ?? {});
      return reply(result === 'created' ? 201 : 200, { _index: index, _id: id, result });
    }
    if (params.method === 'DELETE') {
      const docs = this.#indices.get(index);
      const current = docs?.get(id);
      if (current && version !== undefined && current.version > version) throw conflict(id, current.version, version);
      docs?.delete(id);
      return reply(current ? 200 : 404, { _index: index, _id: id, result: current ? 'deleted' : 'not_found' });
    }
    throw new ResponseError(405, 'method_not_allowed', `${params.method} ${params.path}`);
  }

  #write(index: string, id: string, version: bigint | undefined, source: Json): 'created' | 'updated' {
    let docs = this.#indices.get(index);
    if (!docs) {
      docs = new Map();
      this.#indices.set(index, docs);
    }
    const current = docs.get(id);
    if (current && version !== undefined && current.version > version) throw conflict(id, current.version, version);
    docs.set(id, { version: version ?? (current ? current.version + 1n : 1n), source: structuredClone(source) });
    return current ? 'updated' : 'created';
  }

  /** A realtime GET's answer as text, so that `_version` keeps all its digits. */
  #getText(index: string, id: string): string {
    const doc = this.#indices.get(index)?.get(id);
    const head = `"_index":${JSON.stringify(index)},"_id":${JSON.stringify(id)}`;
    return doc ? `{${head},"_version":${doc.version},"found":true,"_source":${JSON.stringify(doc.source)}}` : `{${head},"found":false}`;
  }

  #mget(body: { docs: Array<{ _index: string; _id: string }> }): string {
    const docs = body.docs.map(({ _index, _id }) =>
      this.#indices.has(_index)
        ? this.#getText(_index, _id)
        : JSON.stringify({ _index, _id, error: { type: 'index_not_found_exception', reason: `no such index [${_index}]` } }),
    );
    return `{"docs":[${docs.join(',')}]}`;
  }

  /** `_bulk` of index actions (what fencedBulk sends): each item applied or refused on its own. */
  #bulk(ndjson: string): Json {
    const lines = ndjson.split('\n').filter((line) => line.trim() !== '');
    const items: Json[] = [];
    for (let at = 0; at < lines.length; at += 2) {
      const action = JSON.parse(lines[at]!) as { index: { _index: string; _id: string; version?: number | string } };
      const { _index, _id } = action.index;
      const digits = action.index.version === undefined ? undefined : versionText(lines[at]!);
      const version = parseVersion(digits === undefined ? undefined : { version: digits });
      try {
        const result = this.#write(_index, _id, version, JSON.parse(lines[at + 1]!) as Json);
        items.push({ index: { _index, _id, status: result === 'created' ? 201 : 200, result } });
      } catch (error) {
        const refused = error as ResponseError;
        items.push({ index: { _index, _id, status: refused.statusCode, error: (refused.body as { error: Json }).error } });
      }
    }
    return { errors: items.some((item) => (item.index as Json).error !== undefined), items };
  }

  #search(index: string, body: Json): Json {
    const docs = this.#indices.get(index);
    if (!docs) throw missingIndex(index);
    const query = (body.query as Json | undefined) ?? { match_all: {} };
    const hits = [...docs.entries()]
      .filter(([id, doc]) => matches(query, id, doc.source))
      .map(([id, doc]) => ({ _index: index, _id: id, _version: Number(doc.version), _source: structuredClone(doc.source) }));
    return { hits: { total: { value: hits.length, relation: 'eq' }, hits } };
  }
}

/** The `version` of an action line as its digits (JSON.parse would round a version past 2^53). */
const versionText = (line: string): string | undefined => line.match(/"version":"?(\d+)"?/)?.[1];

function parseVersion(querystring: Record<string, string> | undefined): bigint | undefined {
  const text = querystring?.version;
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new ResponseError(400, 'action_request_validation_exception', `version [${text}] is not a number`);
  return BigInt(text);
}

function fieldOf(source: Json, path: string): unknown {
  return path.split('.').reduce<unknown>((value, part) => (typeof value === 'object' && value !== null ? (value as Json)[part] : undefined), source);
}

const asList = (clauses: unknown): Json[] => (clauses === undefined ? [] : Array.isArray(clauses) ? (clauses as Json[]) : [clauses as Json]);

function matches(query: Json, id: string, source: Json): boolean {
  const [kind, spec] = Object.entries(query)[0] ?? ['match_all', {}];
  const clause = spec as Json;
  switch (kind) {
    case 'match_all':
      return true;
    case 'ids':
      return (clause.values as string[]).includes(id);
    case 'exists':
      return fieldOf(source, clause.field as string) !== undefined;
    case 'term': {
      const [field, value] = Object.entries(clause)[0]!;
      const wanted = typeof value === 'object' && value !== null ? (value as Json).value : value;
      return fieldOf(source, field) === wanted;
    }
    case 'terms': {
      const [field, values] = Object.entries(clause)[0]!;
      return (values as unknown[]).includes(fieldOf(source, field));
    }
    case 'bool': {
      const all = [...asList(clause.filter), ...asList(clause.must)].every((inner) => matches(inner, id, source));
      const none = asList(clause.must_not).every((inner) => !matches(inner, id, source));
      const should = asList(clause.should);
      return all && none && (should.length === 0 || should.some((inner) => matches(inner, id, source)));
    }
    default:
      throw new ResponseError(400, 'parsing_exception', `the in-memory index does not understand a [${kind}] query`);
  }
}
