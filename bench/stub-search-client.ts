/**
 * A SearchClient that answers the requests of a document lock cycle from memory, as one primary
 * shard of Elasticsearch would (seq_no, primary term, conditional writes, realtime reads): with it,
 * bench/cycle-cpu.ts measures the engine and the store's own CPU without the client's transport, the
 * network or Elasticsearch sharing the cores. Bodies are kept and returned as they were given (no
 * serialisation: that is the transport's share, the same for the engine and for raw requests).
 */
import type { SearchClient } from '../functions/store/search-client.js';

interface StoredDocument {
  seqNo: number;
  source: unknown;
}

interface Conditions {
  if_seq_no?: number;
  if_primary_term?: number;
}

const PRIMARY_TERM = 1;

/** The client's own error shape, as functions/store/errors.ts recognises it (by name). */
function responseError(statusCode: number, type: string): Error {
  return Object.assign(new Error(type), { name: 'ResponseError', meta: { statusCode, body: { error: { type, reason: type } } } });
}

export function stubSearchClient(alias: string): SearchClient & { incarnation: string } {
  const incarnation = `${alias}-e001-20260101-00000000`;
  const documents = new Map<string, StoredDocument>();
  let nextSeqNo = 0;
  const written = (id: string, result: string, seqNo: number) => ({
    _index: incarnation,
    _id: id,
    _version: 1,
    result,
    _shards: { total: 1, successful: 1, failed: 0 },
    _seq_no: seqNo,
    _primary_term: PRIMARY_TERM,
  });
  const conflicts = (current: StoredDocument | undefined, conditions: Conditions): boolean =>
    conditions.if_seq_no !== undefined && (current?.seqNo !== conditions.if_seq_no || conditions.if_primary_term !== PRIMARY_TERM);

  /** One write as the primary applies it: the result, or the status and error type it fails with. */
  function apply(
    action: 'create' | 'index' | 'delete' | 'update',
    id: string,
    conditions: Conditions,
    body: unknown,
  ): { status: number; result?: ReturnType<typeof written> & { get?: unknown }; errorType?: string } {
    const current = documents.get(id);
    if (action === 'update') {
      if (!current) return { status: 404, errorType: 'document_missing_exception' };
      return {
        status: 200,
        result: {
          ...written(id, 'noop', current.seqNo),
          get: { found: true, _seq_no: current.seqNo, _primary_term: PRIMARY_TERM, _source: current.source },
        },
      };
    }
    if (action === 'create' && current) return { status: 409, errorType: 'version_conflict_engine_exception' };
    if (conflicts(current, conditions)) return { status: 409, errorType: 'version_conflict_engine_exception' };
    const seqNo = nextSeqNo++;
    if (action === 'delete') {
      if (!current) return { status: 404, result: written(id, 'not_found', seqNo) };
      documents.delete(id);
      return { status: 200, result: written(id, 'deleted', seqNo) };
    }
    documents.set(id, { seqNo, source: body });
    return { status: current ? 200 : 201, result: written(id, current ? 'updated' : 'created', seqNo) };
  }

  function single(action: 'create' | 'index' | 'delete', request: { id: string; document?: unknown } & Conditions) {
    const outcome = apply(action, request.id, request, request.document);
    if (outcome.status >= 300) throw responseError(outcome.status, outcome.errorType ?? 'not_found');
    return Promise.resolve(outcome.result);
  }

  const client = {
    product: 'elasticsearch' as const,
    incarnation,
    create: (request: { id: string; document: unknown }) => single('create', request),
    index: (request: { id: string; document: unknown } & Conditions) => single('index', request),
    delete: (request: { id: string } & Conditions) => single('delete', request),
    get: (request: { id: string }) => {
      const current = documents.get(request.id);
      return Promise.resolve(
        current
          ? { _index: incarnation, _id: request.id, found: true, _seq_no: current.seqNo, _primary_term: PRIMARY_TERM, _source: current.source }
          : { _index: incarnation, _id: request.id, found: false },
      );
    },
    bulk: (request: { operations: unknown[] }) => {
      const items: unknown[] = [];
      const operations = request.operations;
      for (let position = 0; position < operations.length; ) {
        const [action, meta] = Object.entries(operations[position++] as Record<string, { _id: string } & Conditions>)[0]!;
        const body = action === 'delete' ? undefined : operations[position++];
        const outcome = apply(action as 'create' | 'index' | 'delete' | 'update', meta._id, meta, body);
        items.push({
          [action]: {
            _index: incarnation,
            _id: meta._id,
            status: outcome.status,
            ...outcome.result,
            ...(outcome.errorType ? { error: { type: outcome.errorType, reason: outcome.errorType } } : {}),
          },
        });
      }
      return Promise.resolve({ took: 0, errors: false, items });
    },
  };
  return client as unknown as SearchClient & { incarnation: string };
}
