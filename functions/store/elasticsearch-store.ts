/** LockStore on Elasticsearch core APIs only: get/mget, create, index/delete on if_seq_no, bulk, search. */
import type { Client, estypes } from '@elastic/elasticsearch';
import type { LockDocument } from '../core/model.js';
import { StoreRejectedError, StoreUnavailableError } from '../core/errors.js';
import type { ExpiredPage, ListQuery, LockStore, StoredLock, WriteOp, WriteOutcome } from '../core/store.js';
import { translateError } from './errors.js';

/** Writes are never resent by the client: a resent write is ambiguous, and the engine resolves that by reading back. */
const WRITE_OPTIONS = { maxRetries: 0 } as const;
const READ_OPTIONS = { maxRetries: 1 } as const;

const statusOf = (error: unknown): number | undefined => (error as { meta?: { statusCode?: number } }).meta?.statusCode;

export class ElasticsearchLockStore implements LockStore {
  constructor(
    private readonly client: Client,
    readonly index: string,
  ) {}

  async read(docIds: readonly string[]): Promise<Map<string, StoredLock | null>> {
    const found = new Map<string, StoredLock | null>();
    try {
      if (docIds.length === 1) {
        const docId = docIds[0]!;
        const response = await this.client.get<LockDocument>({ index: this.index, id: docId }, { ...READ_OPTIONS, ignore: [404] });
        found.set(docId, this.toStored(response));
        return found;
      }
      const response = await this.client.mget<LockDocument>({ index: this.index, ids: [...docIds] }, READ_OPTIONS);
      for (const doc of response.docs) {
        if ('error' in doc) throw new StoreUnavailableError(`mget failed for ${doc._id}: ${doc.error.reason ?? doc.error.type}`, { operation: 'read' });
        found.set(doc._id, this.toStored(doc));
      }
      return found;
    } catch (error) {
      throw translateError(error, 'read');
    }
  }

  private toStored(doc: estypes.GetGetResult<LockDocument>): StoredLock | null {
    if (!doc.found || !doc._source) return null;
    return { docId: doc._id, seqNo: doc._seq_no!, primaryTerm: doc._primary_term!, body: doc._source };
  }

  async write(ops: readonly WriteOp[]): Promise<WriteOutcome[]> {
    if (ops.length === 0) return [];
    if (ops.length === 1) return [await this.writeOne(ops[0]!)];
    const operations: unknown[] = [];
    for (const op of ops) {
      if (op.kind === 'create') operations.push({ create: { _id: op.docId } }, op.body);
      else if (op.kind === 'replace') operations.push({ index: { _id: op.docId, if_seq_no: op.ifSeqNo, if_primary_term: op.ifPrimaryTerm } }, op.body);
      else operations.push({ delete: { _id: op.docId, if_seq_no: op.ifSeqNo, if_primary_term: op.ifPrimaryTerm } });
    }
    let response: estypes.BulkResponse;
    try {
      response = await this.client.bulk({ index: this.index, operations }, WRITE_OPTIONS);
    } catch (error) {
      throw translateError(error, 'bulk write');
    }
    return response.items.map((item, index) => {
      const result = Object.values(item)[0] as estypes.BulkResponseItem;
      return this.outcome(ops[index]!, result.status, result._seq_no, result._primary_term, result._shards?.successful, result.error?.type);
    });
  }

  private async writeOne(op: WriteOp): Promise<WriteOutcome> {
    try {
      const response =
        op.kind === 'create'
          ? await this.client.create({ index: this.index, id: op.docId, document: op.body }, WRITE_OPTIONS)
          : op.kind === 'replace'
            ? await this.client.index({ index: this.index, id: op.docId, document: op.body, if_seq_no: op.ifSeqNo, if_primary_term: op.ifPrimaryTerm }, WRITE_OPTIONS)
            : await this.client.delete({ index: this.index, id: op.docId, if_seq_no: op.ifSeqNo, if_primary_term: op.ifPrimaryTerm }, WRITE_OPTIONS);
      return this.outcome(op, op.kind === 'create' ? 201 : 200, response._seq_no, response._primary_term, response._shards.successful);
    } catch (error) {
      const status = statusOf(error);
      if (status === 409 || status === 404) return this.outcome(op, status);
      throw translateError(error, `${op.kind} ${op.docId}`);
    }
  }

  private outcome(op: WriteOp, status: number, seqNo?: number, primaryTerm?: number, successfulShards?: number, errorType?: string): WriteOutcome {
    if (status === 409) return { ok: false, docId: op.docId, reason: 'conflict' };
    if (status === 404) return { ok: false, docId: op.docId, reason: op.kind === 'delete' ? 'missing' : 'conflict' };
    if (status >= 200 && status < 300) {
      // A write no shard copy acknowledged must not become a grant.
      if (seqNo === undefined || primaryTerm === undefined || (successfulShards ?? 0) < 1) {
        throw new StoreUnavailableError(`Elasticsearch did not acknowledge the ${op.kind} of ${op.docId}`, { operation: op.kind, statusCode: status, ambiguous: true });
      }
      return { ok: true, docId: op.docId, seqNo, primaryTerm };
    }
    if (status === 429 || status >= 500) {
      throw new StoreUnavailableError(`Elasticsearch answered ${status} (${errorType ?? 'error'}) to the ${op.kind} of ${op.docId}`, { operation: op.kind, statusCode: status });
    }
    throw new StoreRejectedError(`Elasticsearch refused the ${op.kind} of ${op.docId}: ${status} ${errorType ?? ''}`.trim(), {
      operation: op.kind,
      statusCode: status,
      ...(errorType ? { reason: errorType } : {}),
    });
  }

  async findExpired(before: number, size: number, after?: unknown): Promise<ExpiredPage> {
    const hits = await this.search('sweep search', {
      query: { range: { minExpiresAt: { lt: before } } },
      sort: [{ minExpiresAt: 'asc' }, { lockId: 'asc' }],
      size,
      ...(after ? { search_after: after as estypes.SortResults } : {}),
    });
    const last = hits.at(-1);
    return { locks: hits.map((hit) => hit.lock), ...(hits.length === size && last ? { next: last.sort } : {}) };
  }

  async list(query: ListQuery): Promise<StoredLock[]> {
    const filter: estypes.QueryDslQueryContainer[] = [];
    if (query.namespace) filter.push({ term: { namespace: query.namespace } });
    if (query.granularity) filter.push({ term: { granularity: query.granularity } });
    if (query.owner) filter.push({ term: { 'holders.owner': query.owner } });
    if (query.liveAfter !== undefined) filter.push({ range: { maxExpiresAt: { gt: query.liveAfter } } });
    if (query.pathPrefix) {
      const prefix = query.pathPrefix.replace(/\/+$/, '');
      filter.push({ bool: { should: [{ term: { key: prefix } }, { prefix: { key: `${prefix}/` } }], minimum_should_match: 1 } });
    }
    const hits = await this.search('list', { query: { bool: { filter } }, sort: [{ key: 'asc' }], size: query.limit });
    return hits.map((hit) => hit.lock);
  }

  private async search(operation: string, request: Omit<estypes.SearchRequest, 'index'>): Promise<Array<{ lock: StoredLock; sort?: estypes.SortResults }>> {
    try {
      const response = await this.client.search<LockDocument>({ index: this.index, seq_no_primary_term: true, ...request }, READ_OPTIONS);
      return response.hits.hits.map((hit) => ({
        lock: { docId: hit._id!, seqNo: hit._seq_no!, primaryTerm: hit._primary_term!, body: hit._source! },
        ...(hit.sort ? { sort: hit.sort } : {}),
      }));
    } catch (error) {
      throw translateError(error, operation);
    }
  }
}
