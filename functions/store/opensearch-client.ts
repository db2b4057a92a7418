/**
 * OpenSearch behind the Elasticsearch client's shape (SearchClient). The official OpenSearch client
 * takes documents and queries in `body` and answers `{ body, statusCode }`; the Elasticsearch client
 * takes them as named fields and answers the body. Each method used by the project is translated
 * here, and nowhere else. Errors pass through as the OpenSearch client raises them: they carry the
 * same names and the same `meta` (status, body), which is all store/errors.ts reads.
 */
import { Client as OpenSearch } from '@opensearch-project/opensearch';
import { AwsSigv4Signer } from '@opensearch-project/opensearch/aws-v3';
import type { SearchClient, SearchConnection } from './search-types.js';

type Params = Record<string, unknown>;
type Options = Record<string, unknown> | undefined;
type Call = (params?: Params, options?: Options) => Promise<{ body: unknown }>;

/** Request fields that the OpenSearch client must get as the request's body, per API. */
const BODY_FIELDS = {
  search: ['query', 'sort', 'size', 'from', 'search_after', 'seq_no_primary_term', '_source', 'track_total_hits', 'aggs', 'aggregations'],
  count: ['query'],
  createIndex: ['settings', 'mappings', 'aliases'],
  clone: ['settings', 'aliases'],
} as const;

/** Splits named fields into the OpenSearch client's `body` and its query-string parameters. */
function withBody(params: Params = {}, fields: readonly string[]): Params {
  const body: Params = {};
  const rest: Params = {};
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (fields.includes(name)) body[name] = value;
    else rest[name] = value;
  }
  return Object.keys(body).length > 0 ? { ...rest, body } : rest;
}

/** A field the Elasticsearch client names (`document`, `operations`, `ids`...) moved into `body`. */
function named(params: Params = {}, field: string, wrap: (value: unknown) => unknown = (value) => value): Params {
  const { [field]: value, ...rest } = params;
  return value === undefined ? rest : { ...rest, body: wrap(value) };
}

export function createOpenSearchClient(connection: SearchConnection): SearchClient {
  const nodes = typeof connection.url === 'string' ? [connection.url] : (connection.url ?? []);
  if (nodes.length === 0) throw new Error('An OpenSearch connection needs a node URL');
  const client = new OpenSearch({
    nodes,
    requestTimeout: connection.requestTimeoutMs ?? 5_000,
    // Writes are never resent by the client (an answer lost after a write applied is the engine's to resolve).
    maxRetries: 0,
    ...(connection.sigv4 ? AwsSigv4Signer({ region: connection.sigv4.region, service: connection.sigv4.service ?? 'es' }) : {}),
  });
  return adapt(client);
}

/** Exported for a caller that built its own OpenSearch client (its own transport, its own signer). */
export function adapt(client: OpenSearch): SearchClient {
  const api = client as unknown as Record<string, Call> & { indices: Record<string, Call>; cluster: Record<string, Call>; nodes: Record<string, Call> };
  const answer =
    (call: Call, translate: (params: Params) => Params = (params) => params) =>
    async (params?: Params, options?: Options): Promise<unknown> =>
      (await call(translate(params ?? {}), options)).body;
  const on = (group: Record<string, Call>, name: string, translate?: (params: Params) => Params) => answer(group[name]!.bind(group), translate);
  const adapted = {
    product: 'opensearch' as const,
    get: on(api, 'get'),
    // By `ids`, or by `docs` (each with its own routing, as the lock store sends them).
    mget: on(api, 'mget', (params) => ('docs' in params ? named(params, 'docs', (docs) => ({ docs })) : named(params, 'ids', (ids) => ({ ids })))),
    bulk: on(api, 'bulk', (params) => named(params, 'operations')),
    create: on(api, 'create', (params) => named(params, 'document')),
    index: on(api, 'index', (params) => named(params, 'document')),
    delete: on(api, 'delete'),
    search: on(api, 'search', (params) => withBody(params, BODY_FIELDS.search)),
    searchShards: on(api, 'searchShards'),
    count: on(api, 'count', (params) => withBody(params, BODY_FIELDS.count)),
    info: on(api, 'info'),
    close: () => client.close(),
    indices: {
      refresh: on(api.indices, 'refresh'),
      create: on(api.indices, 'create', (params) => withBody(params, BODY_FIELDS.createIndex)),
      delete: on(api.indices, 'delete'),
      exists: on(api.indices, 'exists'),
      existsAlias: on(api.indices, 'existsAlias'),
      // `features` (which parts of the index to return) is Elasticsearch's: OpenSearch returns them all.
      get: on(api.indices, 'get', ({ features: _, ...params }) => params),
      getAlias: on(api.indices, 'getAlias'),
      getMapping: on(api.indices, 'getMapping'),
      getSettings: on(api.indices, 'getSettings'),
      putMapping: on(api.indices, 'putMapping', ({ properties, _meta, ...params }) => ({
        ...params,
        body: { ...(properties ? { properties } : {}), ...(_meta ? { _meta } : {}) },
      })),
      putSettings: on(api.indices, 'putSettings', (params) => named(params, 'settings')),
      clone: on(api.indices, 'clone', (params) => withBody(params, BODY_FIELDS.clone)),
      addBlock: on(api.indices, 'addBlock'),
      updateAliases: on(api.indices, 'updateAliases', ({ actions, ...params }) => ({ ...params, body: { actions } })),
    },
    // The client's own transport, as it is: the client package's fenced writes talk through it (they read either product's answers by their shape).
    transport: client.transport,
    cluster: { health: on(api.cluster, 'health') },
    nodes: { info: on(api.nodes, 'info') },
    diagnostic: {
      on: (event: string, listener: (...args: unknown[]) => void) => client.on(event as never, listener as never),
      off: (event: string, listener: (...args: unknown[]) => void) => client.off(event as never, listener as never),
    },
  };
  return adapted as unknown as SearchClient;
}
