/**
 * Fenced writes to the user's own indices (packages/client/src/fenced-writes.ts), on the real
 * servers: the project's Elasticsearch (ES_URL, as every test file) and its OpenSearch
 * (OPENSEARCH_URL, else the local node on 127.0.0.1:9250, started here if it was not running).
 * Elasticsearch's client runs from both of its module entries (`import` and `require` give
 * different classes); the fenced writes must read its answers and errors by shape either way.
 *
 * Tokens are strings chosen here; no lock service is involved. Each product gets its own index,
 * made with `index.gc_deletes: 0s` so that a real delete is forgotten at once.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client as ElasticsearchClient, type estypes } from '@elastic/elasticsearch';
import {
  excludeFencedTombstones,
  FENCED_TOMBSTONE_FIELD,
  FencedDocumentExistsError,
  FencedDocumentMissingError,
  FencedOutError,
  type FencedTransportParams,
  type FencedWritesClient,
  fencedBulk,
  fencedCreate,
  fencedDelete,
  fencedIndex,
  fencedUpdate,
  isFencedTombstone,
  ValidationError,
} from '@es-lease-locks/client';
import { MemorySearchIndex } from '@es-lease-locks/client/testing';
import { Client as OpenSearchClient } from '@opensearch-project/opensearch';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type EsTarget, resolveOpenSearch } from '../../infra/es/target.js';

type ElasticsearchModule = typeof import('@elastic/elasticsearch');
const elasticsearchCommonJs = createRequire(import.meta.url)('@elastic/elasticsearch') as ElasticsearchModule;

// Compile-time checks: both clients fit the structural type as they are, and the tombstone filter fits Elasticsearch's query type.
const fitsElasticsearch = (client: ElasticsearchClient): FencedWritesClient => client;
const fitsOpenSearch = (client: OpenSearchClient): FencedWritesClient => client;
const filterFitsQuery: estypes.QueryDslQueryContainer = excludeFencedTombstones;
void [fitsElasticsearch, fitsOpenSearch, filterFitsQuery];

type TestClient = FencedWritesClient & { close(): Promise<void> };

let opensearch: EsTarget | undefined;
const elasticsearchUrl = (): string => inject('esUrl').split(',')[0]!.trim();
const elasticsearchAuth = () => (inject('esApiKey') ? { auth: { apiKey: inject('esApiKey') } } : {});

interface Stored {
  found: boolean;
  version?: string;
  source?: Record<string, unknown>;
}

/** The document as stored on a server, read with fetch: the raw text keeps `_version` exact. */
async function storedOnServer(url: string, index: string, id: string): Promise<Stored> {
  const headers: Record<string, string> = inject('esApiKey') && url === elasticsearchUrl() ? { authorization: `ApiKey ${inject('esApiKey')}` } : {};
  const response = await fetch(`${url}/${index}/_doc/${encodeURIComponent(id)}`, { headers });
  const text = await response.text();
  const body = JSON.parse(text) as { found: boolean; _source?: Record<string, unknown> };
  const version = text.match(/"_version":(\d+)/)?.[1];
  return { found: body.found, ...(version ? { version } : {}), ...(body._source ? { source: body._source } : {}) };
}

// The testing entry's in-memory index runs the same cases as the servers: that is what makes it a fair stand-in.
const memory = new MemorySearchIndex();

const products: Array<{ name: string; connect: () => TestClient; stored: (index: string, id: string) => Promise<Stored> }> = [
  {
    name: 'Elasticsearch, client from import',
    stored: (index, id) => storedOnServer(elasticsearchUrl(), index, id),
    connect: () => new ElasticsearchClient({ node: elasticsearchUrl(), ...elasticsearchAuth(), maxRetries: 0, requestTimeout: 10_000 }),
  },
  {
    name: 'Elasticsearch, client from require',
    stored: (index, id) => storedOnServer(elasticsearchUrl(), index, id),
    connect: () => new elasticsearchCommonJs.Client({ node: elasticsearchUrl(), ...elasticsearchAuth(), maxRetries: 0, requestTimeout: 10_000 }),
  },
  {
    name: 'OpenSearch',
    stored: (index, id) => storedOnServer(opensearch!.url.split(',')[0]!.trim(), index, id),
    connect: () => new OpenSearchClient({ node: opensearch!.url.split(',')[0]!.trim(), maxRetries: 0, requestTimeout: 10_000 }),
  },
  {
    name: 'in memory (@es-lease-locks/client/testing)',
    stored: async (index, id) => {
      const doc = memory.document(index, id);
      return doc ? { found: true, version: doc.version, source: doc.source } : { found: false };
    },
    connect: () => memory,
  },
];

beforeAll(async () => {
  opensearch = await resolveOpenSearch((line) => console.log(`[opensearch] ${line}`));
});
afterAll(async () => {
  await opensearch?.stop();
});

/** The client, recording each request it sends (method and path) before passing it on unchanged. */
function recording(client: FencedWritesClient, before?: (params: FencedTransportParams) => Promise<void>) {
  const requests: string[] = [];
  const wrapped: FencedWritesClient = {
    transport: {
      request: async (params, options) => {
        requests.push(`${params.method} ${params.path}`);
        await before?.(params);
        return client.transport.request(params, options);
      },
    },
  };
  return { client: wrapped, requests };
}

const settle = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );

describe.each(products)('fenced writes: $name', ({ connect, stored: storedIn }) => {
  const index = `fenced-writes-test-${randomBytes(4).toString('hex')}`;
  let client: TestClient;

  const stored = (id: string): Promise<Stored> => storedIn(index, id);

  async function expectFencedOut(attempt: Promise<unknown>, id: string, fencingToken: string, currentToken: string): Promise<FencedOutError> {
    const error = await settle(attempt);
    expect(error).toBeInstanceOf(FencedOutError);
    const fenced = error as FencedOutError;
    expect({ index: fenced.index, id: fenced.id, fencingToken: fenced.fencingToken, currentToken: fenced.currentToken }).toEqual({
      index,
      id,
      fencingToken,
      currentToken,
    });
    expect(fenced.message).toContain(`${index}/${id}`);
    expect(fenced.message).toContain(fencingToken);
    expect(fenced.message).toContain(currentToken);
    return fenced;
  }

  beforeAll(async () => {
    client = connect();
    await client.transport.request(
      { method: 'PUT', path: `/${index}`, body: { settings: { index: { gc_deletes: '0s', number_of_shards: 1, number_of_replicas: 0 } } } },
      { meta: true },
    );
  });
  afterAll(async () => {
    await client.transport.request({ method: 'DELETE', path: `/${index}` }, { meta: true }).catch(() => {});
    await client.close();
  });

  it('index: a newer token replaces, the same token twice succeeds, an older holder is refused naming both tokens', async () => {
    await expect(fencedIndex(client, { index, id: 'i1', fencingToken: '10', document: { v: '1' } })).resolves.toEqual({
      index,
      id: 'i1',
      fencingToken: '10',
      result: 'created',
    });
    await expect(fencedIndex(client, { index, id: 'i1', fencingToken: '10', document: { v: '2' } })).resolves.toMatchObject({ result: 'updated' });
    // A lock handle carries the token as `fencingToken`.
    const lock = { fencingToken: '11' };
    await expect(fencedIndex(client, { index, id: 'i1', fencingToken: lock, document: { v: '3' } })).resolves.toMatchObject({
      fencingToken: '11',
      result: 'updated',
    });
    await expect(fencedIndex(client, { index, id: 'i1', fencingToken: lock, document: { v: '4' } })).resolves.toMatchObject({ result: 'updated' });

    const refused = await expectFencedOut(fencedIndex(client, { index, id: 'i1', fencingToken: '10', document: { v: 'late' } }), 'i1', '10', '11');
    expect(refused.cause).toBeDefined();
    expect(await stored('i1')).toEqual({ found: true, version: '11', source: { v: '4' } });
  });

  it('create: writes where nothing or a tombstone is; refuses a live document, and a newer token fences it', async () => {
    await expect(fencedCreate(client, { index, id: 'c1', fencingToken: '5', document: { c: '1' } })).resolves.toMatchObject({ result: 'created' });
    const exists = await settle(fencedCreate(client, { index, id: 'c1', fencingToken: '6', document: { c: '2' } }));
    expect(exists).toBeInstanceOf(FencedDocumentExistsError);
    expect(exists).toMatchObject({ index, id: 'c1', fencingToken: '6', currentToken: '5' });
    expect((exists as Error).message).toMatch(/already exists/);
    // Even the same token: a create never replaces a live document.
    await expect(fencedCreate(client, { index, id: 'c1', fencingToken: '5', document: { c: '3' } })).rejects.toBeInstanceOf(FencedDocumentExistsError);
    await expectFencedOut(fencedCreate(client, { index, id: 'c1', fencingToken: '4', document: { c: '4' } }), 'c1', '4', '5');
    expect((await stored('c1')).source).toEqual({ c: '1' });

    // Over a tombstone (a fenced delete), with a token not older than the delete's.
    await expect(fencedDelete(client, { index, id: 'c1', fencingToken: '7' })).resolves.toMatchObject({ result: 'deleted' });
    await expect(fencedCreate(client, { index, id: 'c1', fencingToken: '7', document: { c: '5' } })).resolves.toMatchObject({ result: 'created' });
    expect(await stored('c1')).toEqual({ found: true, version: '7', source: { c: '5' } });

    // A tombstone of a newer token fences an older create.
    await expect(fencedDelete(client, { index, id: 'c2', fencingToken: '9' })).resolves.toMatchObject({ result: 'not_found' });
    await expectFencedOut(fencedCreate(client, { index, id: 'c2', fencingToken: '8', document: { c: '1' } }), 'c2', '8', '9');
  });

  it('update: merges fields under the token; an older holder is refused; no document or a tombstone is an error', async () => {
    await fencedIndex(client, { index, id: 'u1', fencingToken: '20', document: { a: '1', nested: { x: 1, y: 1 }, list: [1, 2], keep: 'k' } });
    const merged = await fencedUpdate(client, { index, id: 'u1', fencingToken: '20', doc: { b: 2, nested: { y: 2 }, list: [3], keep: undefined } });
    expect(merged).toEqual({
      index,
      id: 'u1',
      fencingToken: '20',
      result: 'updated',
      document: { a: '1', b: 2, nested: { x: 1, y: 2 }, list: [3], keep: 'k' },
    });
    expect((await stored('u1')).source).toEqual(merged.document);
    await fencedUpdate(client, { index, id: 'u1', fencingToken: '21', doc: { a: '5' } });

    await expectFencedOut(fencedUpdate(client, { index, id: 'u1', fencingToken: '20', doc: { a: 'late' } }), 'u1', '20', '21');
    expect(await stored('u1')).toMatchObject({ version: '21', source: { a: '5' } });

    const missing = await settle(fencedUpdate(client, { index, id: 'u-none', fencingToken: '21', doc: { a: '1' } }));
    expect(missing).toBeInstanceOf(FencedDocumentMissingError);
    expect(missing).toMatchObject({ id: 'u-none', deleted: false, currentToken: undefined });
    expect((await stored('u-none')).found).toBe(false);

    await fencedDelete(client, { index, id: 'u1', fencingToken: '22' });
    const deleted = await settle(fencedUpdate(client, { index, id: 'u1', fencingToken: '22', doc: { a: '6' } }));
    expect(deleted).toBeInstanceOf(FencedDocumentMissingError);
    expect(deleted).toMatchObject({ id: 'u1', deleted: true, currentToken: '22' });
    await expectFencedOut(fencedUpdate(client, { index, id: 'u1', fencingToken: '21', doc: { a: '7' } }), 'u1', '21', '22');
    expect(isFencedTombstone((await stored('u1')).source)).toBe(true);
  });

  it('update: a newer holder writing between the read and the write is refused by the server', async () => {
    await fencedIndex(client, { index, id: 'r1', fencingToken: '30', document: { n: '1' } });
    let interleaved = false;
    const { client: racing } = recording(client, async (params) => {
      if (params.method === 'PUT' && !interleaved) {
        interleaved = true;
        await fencedIndex(client, { index, id: 'r1', fencingToken: '31', document: { n: 'newer' } });
      }
    });
    const refused = await expectFencedOut(fencedUpdate(racing, { index, id: 'r1', fencingToken: '30', doc: { n: '2' } }), 'r1', '30', '31');
    // The server's 409, as the client raised it, is the cause.
    expect((refused.cause as { meta?: { statusCode?: number } }).meta?.statusCode).toBe(409);
    expect((await stored('r1')).source).toEqual({ n: 'newer' });
  });

  it('delete: leaves a tombstone that keeps the token, still fencing after index.gc_deletes; searches leave it out', async () => {
    await fencedIndex(client, { index, id: 'd1', fencingToken: '40', document: { k: '1' } });
    await expectFencedOut(fencedDelete(client, { index, id: 'd1', fencingToken: '39' }), 'd1', '39', '40');
    await expect(fencedDelete(client, { index, id: 'd1', fencingToken: '41' })).resolves.toEqual({
      index,
      id: 'd1',
      fencingToken: '41',
      result: 'deleted',
    });
    const tombstone = await stored('d1');
    expect(tombstone.version).toBe('41');
    expect(isFencedTombstone(tombstone.source)).toBe(true);
    expect(Object.keys(tombstone.source!)).toEqual([FENCED_TOMBSTONE_FIELD]);
    expect(Number.isNaN(Date.parse(tombstone.source![FENCED_TOMBSTONE_FIELD] as string))).toBe(false);

    // The control: a real delete with a version is forgotten once gc_deletes (0s here) has passed.
    await fencedIndex(client, { index, id: 'd-real', fencingToken: '50', document: { k: '1' } });
    await client.transport.request(
      { method: 'DELETE', path: `/${index}/_doc/d-real`, querystring: { version: '51', version_type: 'external_gte' } },
      { meta: true },
    );
    await sleep(1_200);
    await expect(fencedIndex(client, { index, id: 'd-real', fencingToken: '49', document: { k: 'back from the past' } })).resolves.toMatchObject({
      result: 'created',
    });

    // The tombstone is not forgotten: every older write stays refused.
    await expectFencedOut(fencedIndex(client, { index, id: 'd1', fencingToken: '40', document: { k: 'late' } }), 'd1', '40', '41');
    await expectFencedOut(fencedCreate(client, { index, id: 'd1', fencingToken: '40', document: { k: 'late' } }), 'd1', '40', '41');
    await expectFencedOut(fencedUpdate(client, { index, id: 'd1', fencingToken: '40', doc: { k: 'late' } }), 'd1', '40', '41');
    await expectFencedOut(fencedDelete(client, { index, id: 'd1', fencingToken: '40' }), 'd1', '40', '41');
    await expectFencedOut(
      fencedBulk(client, { fencingToken: '40', items: [{ op: 'index', index, id: 'd1', document: { k: 'late' } }] }).then(({ items }) => {
        if (!items[0]!.ok) throw items[0]!.error;
      }),
      'd1',
      '40',
      '41',
    );
    expect(isFencedTombstone((await stored('d1')).source)).toBe(true);

    await expect(fencedDelete(client, { index, id: 'd-none', fencingToken: '1' })).resolves.toMatchObject({ result: 'not_found' });

    // Reading around tombstones: the filter leaves them out of searches.
    await fencedIndex(client, { index, id: 'd-live', fencingToken: '1', document: { k: '2' }, refresh: true });
    const search = (await client.transport.request(
      {
        method: 'POST',
        path: `/${index}/_search`,
        body: { query: { bool: { filter: [excludeFencedTombstones, { ids: { values: ['d1', 'd-none', 'd-live'] } }] } } },
      },
      { meta: true },
    )) as { body: { hits: { hits: Array<{ _id: string }> } } };
    expect(search.body.hits.hits.map((hit) => hit._id)).toEqual(['d-live']);
  });

  it('bulk: one _mget and one _bulk; each older item is refused on its own naming both tokens, newer ones land', async () => {
    for (const id of ['b-index', 'b-update', 'b-delete', 'b-create']) await fencedIndex(client, { index, id, fencingToken: '60', document: { v: 'current' } });
    const { client: counted, requests } = recording(client);
    const late = await fencedBulk(counted, {
      fencingToken: '59',
      items: [
        { op: 'index', index, id: 'b-index', document: { v: 'late' } },
        { op: 'update', index, id: 'b-update', doc: { v: 'late' } },
        { op: 'delete', index, id: 'b-delete' },
        { op: 'create', index, id: 'b-create', document: { v: 'late' } },
        { op: 'index', index, id: 'b-new', document: { v: 'new' }, fencingToken: '61' },
      ],
    });
    expect(requests).toEqual(['POST /_mget', 'POST /_bulk']);
    expect(late.errors).toBe(true);
    expect(late.items.map((item) => item.ok)).toEqual([false, false, false, false, true]);
    for (const [n, id] of ['b-index', 'b-update', 'b-delete', 'b-create'].entries()) {
      const item = late.items[n]!;
      await expectFencedOut(Promise.reject(item.ok ? new Error('landed') : item.error), id, '59', '60');
    }
    expect(late.items[4]).toEqual({ ok: true, op: 'index', index, id: 'b-new', fencingToken: '61', result: 'created' });
    for (const id of ['b-index', 'b-update', 'b-delete', 'b-create'])
      expect(await stored(id)).toEqual({ found: true, version: '60', source: { v: 'current' } });

    // Newer (and same) tokens land; items on one document apply in order.
    const newer = await fencedBulk(client, {
      fencingToken: { fencingToken: '61' },
      refresh: 'wait_for',
      items: [
        { op: 'update', index, id: 'b-update', doc: { w: 1 } },
        { op: 'delete', index, id: 'b-delete' },
        { op: 'index', index, id: 'b-index', document: { v: 'same token' }, fencingToken: '60' },
        { op: 'create', index, id: 'b-create', document: { v: 'exists' } },
        { op: 'create', index, id: 'b-seq', document: { x: 1 } },
        { op: 'update', index, id: 'b-seq', doc: { y: 2 } },
        { op: 'delete', index, id: 'b-gone' },
      ],
    });
    expect(newer.items.map((item) => (item.ok ? item.result : (item.error as Error).name))).toEqual([
      'updated',
      'deleted',
      'updated',
      'FencedDocumentExistsError',
      'created',
      'updated',
      'not_found',
    ]);
    expect(await stored('b-update')).toEqual({ found: true, version: '61', source: { v: 'current', w: 1 } });
    expect(isFencedTombstone((await stored('b-delete')).source)).toBe(true);
    expect(await stored('b-index')).toEqual({ found: true, version: '60', source: { v: 'same token' } });
    expect(await stored('b-seq')).toEqual({ found: true, version: '61', source: { x: 1, y: 2 } });
  });

  it('bulk: a newer holder writing between the read and the writes has the server refuse the update item', async () => {
    await fencedIndex(client, { index, id: 'br1', fencingToken: '70', document: { n: '1' } });
    const { client: racing, requests } = recording(client, async (params) => {
      if (params.path === '/_bulk') await fencedIndex(client, { index, id: 'br1', fencingToken: '72', document: { n: 'newer' } });
    });
    const result = await fencedBulk(racing, {
      fencingToken: '71',
      items: [
        { op: 'update', index, id: 'br1', doc: { n: '2' } },
        { op: 'index', index, id: 'br2', document: { n: '2' } },
      ],
    });
    expect(requests).toEqual(['POST /_mget', 'POST /_bulk']);
    const [update, other] = result.items;
    await expectFencedOut(Promise.reject(update!.ok ? new Error('landed') : update!.error), 'br1', '71', '72');
    expect(other).toMatchObject({ ok: true, result: 'created' });
    expect((await stored('br1')).source).toEqual({ n: 'newer' });
  });

  it('tokens above 2^53 compare exactly: 9007199254740993 fences 9007199254740992', async () => {
    const newer = '9007199254740993';
    const older = '9007199254740992';
    await fencedIndex(client, { index, id: 'big', fencingToken: newer, document: { v: '1' } });
    expect((await stored('big')).version).toBe(newer);
    await expectFencedOut(fencedIndex(client, { index, id: 'big', fencingToken: older, document: { v: 'late' } }), 'big', older, newer);
    // Refused at the read, without a write: its version is read exactly, not as the JSON number it is.
    const { client: counted, requests } = recording(client);
    await expectFencedOut(fencedUpdate(counted, { index, id: 'big', fencingToken: older, doc: { v: 'late' } }), 'big', older, newer);
    expect(requests).toEqual([`GET /${index}/_doc/big`]);
    const exists = await settle(fencedCreate(client, { index, id: 'big', fencingToken: newer, document: { v: 'again' } }));
    expect(exists).toMatchObject({ name: 'FencedDocumentExistsError', currentToken: newer });
    await expect(fencedUpdate(client, { index, id: 'big', fencingToken: newer, doc: { w: 2 } })).resolves.toMatchObject({ document: { v: '1', w: 2 } });

    const bulk = await fencedBulk(client, {
      fencingToken: older,
      items: [
        { op: 'index', index, id: 'big', document: { v: 'late' } },
        { op: 'update', index, id: 'big', doc: { v: 'late' } },
        { op: 'delete', index, id: 'big' },
      ],
    });
    for (const item of bulk.items) await expectFencedOut(Promise.reject(item.ok ? new Error('landed') : item.error), 'big', older, newer);

    await fencedDelete(client, { index, id: 'big', fencingToken: '9007199254740994' });
    await expectFencedOut(fencedIndex(client, { index, id: 'big', fencingToken: newer, document: { v: 'late' } }), 'big', newer, '9007199254740994');
    // The largest token a version holds.
    await expect(fencedIndex(client, { index, id: 'big', fencingToken: '9223372036854775807', document: { v: 'max' } })).resolves.toMatchObject({
      result: 'updated',
    });
    expect((await stored('big')).version).toBe('9223372036854775807');
  });

  it('a bad token is refused before any request, naming fencingToken and the rule', async () => {
    const { client: counted, requests } = recording(client);
    const bad: Array<[unknown, string]> = [
      ['', 'format'],
      ['01', 'format'],
      ['-1', 'format'],
      ['+1', 'format'],
      ['1.0', 'format'],
      ['1e3', 'format'],
      [' 7', 'format'],
      ['٣', 'format'],
      ['9223372036854775808', 'max'],
      [12, 'type'],
      [12n, 'type'],
      [undefined, 'required'],
      [null, 'required'],
      [{ fencingToken: '007' }, 'format'],
    ];
    const target = { index, id: 'v1' };
    for (const [token, rule] of bad) {
      const fencingToken = token as string;
      const attempts = [
        fencedIndex(counted, { ...target, fencingToken, document: {} }),
        fencedCreate(counted, { ...target, fencingToken, document: {} }),
        fencedUpdate(counted, { ...target, fencingToken, doc: {} }),
        fencedDelete(counted, { ...target, fencingToken }),
      ];
      for (const attempt of attempts) {
        const error = await settle(attempt);
        expect(error, String(token)).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).fields).toEqual([{ field: 'fencingToken', rule, message: expect.any(String) }]);
        expect((error as Error).message).toMatch(/fencingToken/);
      }
      const bulk = await settle(fencedBulk(counted, { items: [{ op: 'delete', ...target, fencingToken }] }));
      expect((bulk as ValidationError).fields).toEqual([{ field: 'items.0.fencingToken', rule, message: expect.any(String) }]);
    }
    const shared = await settle(fencedBulk(counted, { fencingToken: '0x1', items: [{ op: 'delete', ...target }] }));
    expect((shared as ValidationError).fields).toEqual([{ field: 'fencingToken', rule: 'format', message: expect.any(String) }]);
    // The tombstone's field is not a document's.
    const reserved = await settle(fencedIndex(counted, { ...target, fencingToken: '1', document: { [FENCED_TOMBSTONE_FIELD]: 'x' } }));
    expect((reserved as ValidationError).fields).toEqual([{ field: `document.${FENCED_TOMBSTONE_FIELD}`, rule: 'not_allowed', message: expect.any(String) }]);
    expect(requests).toEqual([]);
    expect((await stored('v1')).found).toBe(false);
  });

  it('other failures are the client’s own errors: an update in an index that does not exist', async () => {
    const error = await settle(fencedUpdate(client, { index: `${index}-missing`, id: 'x', fencingToken: '1', doc: { a: '1' } }));
    expect(error).toMatchObject({ name: 'ResponseError', meta: { statusCode: 404 } });
    expect(error).not.toBeInstanceOf(FencedOutError);
  });
});

describe('fenced writes: an Elasticsearch client that asks for compressed answers', () => {
  const index = `fenced-writes-test-${randomBytes(4).toString('hex')}`;
  // Elastic Cloud's default: the raw answers the fenced reads parse come gzipped.
  const client = new ElasticsearchClient({ node: elasticsearchUrl(), ...elasticsearchAuth(), maxRetries: 0, compression: true });
  afterAll(async () => {
    await client.transport.request({ method: 'DELETE', path: `/${index}` }, { meta: true }).catch(() => {});
    await client.close();
  });

  it('reads versions past 2^53 exactly from the gzipped answers', async () => {
    await fencedIndex(client, { index, id: 'z', fencingToken: '9007199254740993', document: { v: '1' }, refresh: 'wait_for' });
    const exists = await settle(fencedCreate(client, { index, id: 'z', fencingToken: '9007199254740993', document: { v: '2' } }));
    expect(exists).toMatchObject({ name: 'FencedDocumentExistsError', currentToken: '9007199254740993' });
    const bulk = await fencedBulk(client, { fencingToken: '9007199254740992', items: [{ op: 'update', index, id: 'z', doc: { v: '3' } }] });
    expect(bulk.items[0]).toMatchObject({ ok: false, error: { name: 'FencedOutError', currentToken: '9007199254740993' } });
    await expect(fencedUpdate(client, { index, id: 'z', fencingToken: '9007199254740993', doc: { w: '4' } })).resolves.toMatchObject({
      document: { v: '1', w: '4' },
    });
  });
});
