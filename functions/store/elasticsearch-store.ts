/** LockStore on Elasticsearch core APIs only: get/mget, create, index/delete on if_seq_no, bulk, search. */
import type { estypes } from '@elastic/elasticsearch';
import { StoreRejectedError, StoreUnavailableError } from '../../packages/engine/src/errors.js';
import { type BelowScope, belowScopeOf } from '../../packages/engine/src/granularity/index.js';
import type { LockDocument } from '../../packages/engine/src/model.js';
import type { SharedSettings } from '../../packages/engine/src/settings.js';
import type {
  BelowQuery,
  BelowResult,
  ExpiredPage,
  ListQuery,
  LockIndexFacts,
  LockStore,
  StoredLock,
  WriteOp,
  WriteOutcome,
} from '../../packages/engine/src/store.js';
import { opaqueIdOption } from './correlation.js';
import { describeLockIndex } from './describe-index.js';
import { isIndexNotFound, isNoCopyOnNode, missingLockIndex, responseFailure, translateError } from './errors.js';
import { epochOfIncarnation } from './incarnation.js';
import { namespaceRouting, routingOf } from './routing.js';
import { type SearchClient, serverName } from './search-client.js';
import { readSharedSettings, SHARED_SETTINGS_META } from './shared-settings.js';
import { storedFromHit } from './stored-hit.js';
import { removeStrays } from './strays.js';

/** Writes are never resent by the client: a resent write is ambiguous, and the engine resolves that by reading back. */
const writeOptions = () => ({ maxRetries: 0, ...opaqueIdOption() });
const readOptions = () => ({ maxRetries: 1, ...opaqueIdOption() });

// Every request that names a lock document is routed by its namespace (routing.ts): one shard per namespace.
// On a lock index of one shard (every one made before shards, and the default) routing changes nothing:
// every routing leads to that shard, so documents written without routing are found as before.
const primaryReadItem = (docId: string): unknown[] => [{ update: { _id: docId, routing: routingOf(docId) } }, { doc: {}, detect_noop: true }];

const routedDoc = (docId: string) => ({ _id: docId, routing: routingOf(docId) });

function writeItem(op: WriteOp): unknown[] {
  const routing = routingOf(op.docId);
  if (op.kind === 'create') return [{ create: { _id: op.docId, routing } }, op.body];
  const condition = { _id: op.docId, routing, if_seq_no: op.ifSeqNo, if_primary_term: op.ifPrimaryTerm };
  // A concrete index in an item needs its own require_alias: false (the request's true refuses any concrete index).
  if (op.kind === 'replace') return [{ index: { ...condition, ...(op.index ? { _index: op.index, require_alias: false } : {}) } }, op.body];
  return [{ delete: { ...condition, ...(op.index ? { _index: op.index } : {}) } }];
}

const goneOutcome = (op: { docId: string }): { ok: false; docId: string; reason: 'missing' } => ({ ok: false, docId: op.docId, reason: 'missing' });

/** A write refused by a block on its index (`index.blocks.write`, read-only): it did not apply. */
const isWriteBlock = (result: Pick<ItemResult, 'status' | 'errorType'>): boolean => result.status === 403 && result.errorType === 'cluster_block_exception';

/**
 * A failover or a relocation of the lock index's primary settles within seconds; the search below
 * looks it up again this often, with growing jittered pauses, before it answers "unavailable".
 */
const PRIMARY_SETTLE = { attempts: 5, pauseMs: 100, budgetMs: 2_000 };

/** The primary is not started, or not (any more) where the search below looked: retryable, and retried here first. */
class PrimaryUnsettledError extends StoreUnavailableError {}

const primaryUnsettled = (error: unknown): boolean =>
  error instanceof PrimaryUnsettledError || (error instanceof StoreUnavailableError && isNoCopyOnNode(error.cause));

/**
 * The primary copies last seen by the search below, one per routing (namespace): its shard's. Bounded,
 * so that a function that sees many namespaces keeps a few thousand small entries at most (a namespace
 * dropped from it costs one more search_shards at its next search below).
 */
const KNOWN_PRIMARIES = 4_096;

interface PrimaryCopy {
  node: string;
  allocationId: string;
}

/** A lock on a directory waits for at most this many live locks below it (pages of search_after). */
const BELOW_PAGE_SIZE = 1_000;
const BELOW_PAGES = 100;

/** The documents a search below covers (a tree path's, or the namespace's root's), as its granularity's rule says: by granularity and key prefix. */
const belowFilter = (scope: BelowScope): estypes.QueryDslQueryContainer[] => [
  { terms: { granularity: [...scope.granularities] } },
  ...(scope.keyPrefix === undefined ? [] : [{ prefix: { key: scope.keyPrefix } }]),
];

interface ItemResult {
  status: number;
  index?: string;
  seqNo?: number;
  primaryTerm?: number;
  successfulShards?: number;
  errorType?: string;
  errorReason?: string;
}

export class ElasticsearchLockStore implements LockStore {
  /**
   * @param index the lock index: an alias (see ensureLockIndex). Writes carry `require_alias`, so a
   * deleted lock index is an error instead of a new, empty index whose fencing tokens restart.
   */
  constructor(
    private readonly client: SearchClient,
    readonly index: string,
  ) {}

  /** Elasticsearch or OpenSearch, as messages name it. */
  private get server(): string {
    return serverName(this.client);
  }

  private translate(error: unknown, operation: string, lockIndex?: string, write = false): Error {
    return translateError(error, operation, lockIndex, write, this.server);
  }

  async read(docIds: readonly string[]): Promise<Map<string, StoredLock | null>> {
    const found = new Map<string, StoredLock | null>();
    try {
      if (docIds.length === 1) {
        const docId = docIds[0]!;
        const response = await this.client.get<LockDocument>({ index: this.index, id: docId, routing: routingOf(docId) }, { ...readOptions(), ignore: [404] });
        // With 404 ignored, a missing index comes back as an error body, not as "no such document".
        const error = (response as unknown as { error?: { type?: string } }).error;
        if (error)
          throw isIndexNotFound(error.type)
            ? missingLockIndex(this.index, 'read')
            : new StoreRejectedError({ operation: 'read' }, `get ${docId} failed: ${error.type}`);
        found.set(docId, this.toStored(response));
        return found;
      }
      const response = await this.client.mget<LockDocument>({ index: this.index, docs: docIds.map(routedDoc) }, readOptions());
      for (const doc of response.docs) {
        if ('error' in doc) {
          if (isIndexNotFound(doc.error.type)) throw missingLockIndex(this.index, 'read');
          throw new StoreUnavailableError({ operation: 'read' }, `mget failed for ${doc._id}: ${doc.error.reason ?? doc.error.type}`);
        }
        found.set(doc._id, this.toStored(doc));
      }
      return found;
    } catch (error) {
      throw this.translate(error, 'read', this.index);
    }
  }

  private toStored(doc: estypes.GetGetResult<LockDocument>): StoredLock | null {
    if (!doc.found || !doc._source) return null;
    return {
      docId: doc._id,
      seqNo: doc._seq_no!,
      primaryTerm: doc._primary_term!,
      index: doc._index,
      epoch: epochOfIncarnation(doc._index),
      body: doc._source,
    };
  }

  /**
   * A no-op partial update per document, with `_source`: it runs on the primary through the write
   * path, changes nothing (no new seq_no) and returns the document as the primary has it. A copy
   * cut off from the master refuses it (the no-master block covers writes), where a GET would answer.
   */
  async readPrimary(docIds: readonly string[]): Promise<Map<string, StoredLock | null>> {
    const response = await this.bulk(docIds.flatMap(primaryReadItem), 'primary read', false);
    const found = new Map<string, StoredLock | null>();
    response.items.forEach((item, position) => {
      const docId = docIds[position]!;
      const read = this.primaryRead(docId, item.update!);
      if (read instanceof Error) throw read;
      found.set(docId, read);
    });
    return found;
  }

  async write(ops: readonly WriteOp[]): Promise<WriteOutcome[]> {
    if (ops.length === 0) return [];
    if (ops.length === 1) return this.outcomes(ops, [await this.writeOne(ops[0]!)]);
    const response = await this.bulk(ops.flatMap(writeItem), 'bulk write', true);
    return this.outcomes(
      ops,
      response.items.map((item) => this.itemResult(Object.values(item)[0] as estypes.BulkResponseItem)),
    );
  }

  /**
   * One bulk: the writes, then a no-op update per read. The items of one namespace go to one shard
   * (routing), whose primary executes them in order, so each read sees the primary after the writes
   * of its namespace (a lock's documents are all in one namespace); a read item that failed is left out.
   */
  async writeThenRead(ops: readonly WriteOp[], docIds: readonly string[]): Promise<{ outcomes: WriteOutcome[]; read: Map<string, StoredLock | null> }> {
    const read = new Map<string, StoredLock | null>();
    if (ops.length === 0 && docIds.length === 0) return { outcomes: [], read };
    const response = await this.bulk([...ops.flatMap(writeItem), ...docIds.flatMap(primaryReadItem)], 'bulk write', true);
    const outcomes = await this.outcomes(
      ops,
      ops.map((_, position) => this.itemResult(Object.values(response.items[position]!)[0] as estypes.BulkResponseItem)),
    );
    docIds.forEach((docId, position) => {
      const found = this.primaryRead(docId, response.items[ops.length + position]!.update!);
      if (!(found instanceof Error)) read.set(docId, found);
    });
    return { outcomes, read };
  }

  /**
   * The outcomes of the ops sent, from their results. A write pinned to an incarnation (one the
   * condition was read in) is sent there without looking at the alias first:
   * - the incarnation was left, and closed before it was left (change-incarnation.ts): a write block
   *   refuses the write, and it is `missing` once the alias is seen elsewhere (nothing written there
   *   counts). Still behind the alias (the move under way, or an operator's block), it is the
   *   retryable error of any other write block;
   * - it was deleted: the write either finds no index (`missing`) or, where the cluster auto-creates
   *   indices, creates an empty one of that name, where its condition (a sequence number) finds no
   *   document and fails (`conflict`: the caller reads again through the alias). Nothing is ever
   *   written there: every write pinned to an incarnation is conditional, and creates go through the
   *   alias. The empty index is removed by `removeStrays`.
   */
  private async outcomes(sent: readonly WriteOp[], results: ItemResult[]): Promise<WriteOutcome[]> {
    const left = await this.leftIncarnations(sent, results);
    return sent.map((op, position) => (op.kind !== 'create' && op.index && left.has(op.index) ? goneOutcome(op) : this.outcome(op, results[position]!)));
  }

  /** The incarnations that pinned writes found write-blocked and that are no longer behind the alias (one look each, only then). */
  private async leftIncarnations(sent: ReadonlyArray<{ kind: string; index?: string | undefined }>, results: ItemResult[]): Promise<Set<string>> {
    const blocked = [...new Set(sent.flatMap((op, position) => (op.kind !== 'create' && op.index && isWriteBlock(results[position]!) ? [op.index] : [])))];
    if (blocked.length === 0) return new Set();
    try {
      const behind = await Promise.all(blocked.map((index) => this.client.indices.existsAlias({ index, name: this.index }, readOptions())));
      return new Set(blocked.filter((_, position) => !behind[position]));
    } catch (error) {
      throw this.translate(error, 'look up the incarnation', this.index);
    }
  }

  private async bulk(operations: unknown[], operation: string, mayHaveApplied: boolean): Promise<estypes.BulkResponse> {
    try {
      // require_alias applies to create, index and update actions; a delete never creates an index.
      return await this.client.bulk({ index: this.index, operations, require_alias: true, _source: true }, writeOptions());
    } catch (error) {
      throw this.translate(error, operation, this.index, mayHaveApplied);
    }
  }

  private primaryRead(docId: string, result: estypes.BulkResponseItem): StoredLock | null | Error {
    if (result.status === 404 && result.error?.type === 'document_missing_exception') return null;
    const get = result.get as (estypes.InlineGet<LockDocument> & { _seq_no?: number; _primary_term?: number }) | undefined;
    if (result.status >= 300 || !get?.found || !get._source) return this.itemError('primary read', docId, this.itemResult(result));
    return {
      docId,
      seqNo: get._seq_no ?? result._seq_no!,
      primaryTerm: get._primary_term ?? result._primary_term!,
      index: result._index,
      epoch: epochOfIncarnation(result._index),
      body: get._source,
    };
  }

  private itemResult(result: estypes.BulkResponseItem): ItemResult {
    return {
      status: result.status,
      index: result._index,
      ...(result._seq_no !== undefined && result._seq_no !== null ? { seqNo: result._seq_no } : {}),
      ...(result._primary_term !== undefined && result._primary_term !== null ? { primaryTerm: result._primary_term } : {}),
      ...(result._shards ? { successfulShards: result._shards.successful } : {}),
      ...(result.error?.type ? { errorType: result.error.type } : {}),
      ...(result.error?.reason ? { errorReason: result.error.reason } : {}),
    };
  }

  private async writeOne(op: WriteOp): Promise<ItemResult> {
    try {
      const response =
        op.kind === 'create'
          ? await this.client.create({ index: this.index, id: op.docId, routing: routingOf(op.docId), document: op.body, require_alias: true }, writeOptions())
          : op.kind === 'replace'
            ? await this.client.index(
                {
                  // Pinned: the incarnation the condition was read in (see `outcomes` for one that is gone).
                  ...(op.index ? { index: op.index, require_alias: false } : { index: this.index, require_alias: true }),
                  id: op.docId,
                  routing: routingOf(op.docId),
                  document: op.body,
                  if_seq_no: op.ifSeqNo,
                  if_primary_term: op.ifPrimaryTerm,
                },
                writeOptions(),
              )
            : await this.client.delete(
                { index: op.index ?? this.index, id: op.docId, routing: routingOf(op.docId), if_seq_no: op.ifSeqNo, if_primary_term: op.ifPrimaryTerm },
                writeOptions(),
              );
      return {
        status: op.kind === 'create' ? 201 : 200,
        index: response._index,
        seqNo: response._seq_no,
        primaryTerm: response._primary_term,
        successfulShards: response._shards.successful,
      };
    } catch (error) {
      const failure = responseFailure(error);
      if (failure?.statusCode === 409 || failure?.statusCode === 404 || (failure && isWriteBlock({ status: failure.statusCode, errorType: failure.type }))) {
        return {
          status: failure.statusCode,
          ...(failure.type ? { errorType: failure.type } : {}),
          ...(failure.reason ? { errorReason: failure.reason } : {}),
        };
      }
      throw this.translate(error, `${op.kind} ${op.docId}`, this.index, true);
    }
  }

  private outcome(op: Pick<WriteOp, 'kind' | 'docId'> & { index?: string | undefined }, result: ItemResult): WriteOutcome {
    const { status } = result;
    if (status === 409) return { ok: false, docId: op.docId, reason: 'conflict' };
    if (status === 404) {
      if (isIndexNotFound(result.errorType)) {
        // A write aimed at an earlier incarnation (read, or a token's note made, before the index was re-created): that document is gone.
        if (op.kind !== 'create' && op.index) return { ok: false, docId: op.docId, reason: 'missing' };
        return { ok: false, docId: op.docId, reason: 'error', error: missingLockIndex(this.index, op.kind) };
      }
      return { ok: false, docId: op.docId, reason: op.kind === 'delete' ? 'missing' : 'conflict' };
    }
    if (status >= 200 && status < 300) {
      // A write no shard copy acknowledged must not become a grant, nor be taken as not applied.
      if (result.seqNo === undefined || result.primaryTerm === undefined || result.index === undefined || (result.successfulShards ?? 0) < 1) {
        return {
          ok: false,
          docId: op.docId,
          reason: 'error',
          error: new StoreUnavailableError(
            {
              operation: op.kind,
              statusCode: status,
              ambiguous: true,
            },
            `${this.server} did not acknowledge the ${op.kind} of ${op.docId}`,
          ),
        };
      }
      return { ok: true, docId: op.docId, seqNo: result.seqNo, primaryTerm: result.primaryTerm, index: result.index, epoch: epochOfIncarnation(result.index) };
    }
    return { ok: false, docId: op.docId, reason: 'error', error: this.itemError(op.kind, op.docId, result) };
  }

  private itemError(operation: string, docId: string, result: ItemResult): StoreUnavailableError | StoreRejectedError {
    if (result.status === 404 && isIndexNotFound(result.errorType)) return missingLockIndex(this.index, operation);
    const detail = `${result.status} (${result.errorType ?? 'error'}${result.errorReason ? `: ${result.errorReason}` : ''})`;
    // A write block: the lock index moving to a new incarnation (for a moment), or an operator's; nothing was written.
    if (result.status === 429 || result.status >= 500 || isWriteBlock(result)) {
      return new StoreUnavailableError({ operation, statusCode: result.status }, `${this.server} answered ${detail} to the ${operation} of ${docId}`);
    }
    return new StoreRejectedError(
      {
        operation,
        statusCode: result.status,
        ...(result.errorType ? { reason: result.errorType } : {}),
      },
      `${this.server} refused the ${operation} of ${docId}: ${detail}`,
    );
  }

  /** Every shard: the sweeper looks at every namespace. */
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
    // One namespace lives on one shard; without one, every shard is searched.
    const hits = await this.search('list', {
      query: { bool: { filter } },
      sort: [{ key: 'asc' }],
      size: query.limit,
      ...(query.namespace ? { routing: namespaceRouting(query.namespace) } : {}),
    });
    return hits.map((hit) => hit.lock);
  }

  /**
   * Searched on the primary copy only (`_only_nodes`, one copy of a shard per node), which applied
   * every write in sequence-number order: a replica may have received a later write before an
   * earlier one. The search is routed by the namespace, so it reaches the one shard that holds the
   * namespace's documents, and the primary looked up is that shard's. The primary must be the same
   * copy before and after, or the answer is refused. A primary that failed over or moved meanwhile is
   * looked up again (see PRIMARY_SETTLE).
   */
  async findLiveBelow(query: BelowQuery): Promise<BelowResult> {
    const giveUpAt = Date.now() + PRIMARY_SETTLE.budgetMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.searchBelowOnPrimary(query);
      } catch (error) {
        if (!primaryUnsettled(error)) throw error;
        const pause = PRIMARY_SETTLE.pauseMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
        if (attempt >= PRIMARY_SETTLE.attempts || Date.now() + pause > giveUpAt) {
          throw new StoreUnavailableError(
            { operation: 'search below', cause: error },
            `The lock index's primary shard did not settle in ${attempt} attempts of the search below ${query.path ?? query.namespace}: ${(error as Error).message}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  /**
   * The primary copy of each routing's shard as last seen. A copy keeps its allocation id for life,
   * is never demoted to a replica and gets a new id when it moves: so a copy seen as the primary of a
   * shard at some earlier time and again after the search was that shard's primary throughout, and
   * the lookup before the search can be an earlier one. One lookup per search, then, instead of two.
   * Per routing, because each namespace's search must be judged against its own shard's primary:
   * the entry of a routing is only ever its shard's (both lookups are routed the same way).
   */
  private readonly knownPrimaries = new Map<string, PrimaryCopy>();

  private async searchBelowOnPrimary(query: BelowQuery): Promise<BelowResult> {
    const routing = namespaceRouting(query.namespace);
    const primary = this.knownPrimaries.get(routing) ?? (await this.primaryCopy(routing));
    if (query.refresh !== false) {
      try {
        await this.client.indices.refresh({ index: this.index }, readOptions());
      } catch (error) {
        throw this.translate(error, 'refresh before search below', this.index);
      }
    }
    let result: BelowResult;
    try {
      result = await this.searchBelow(query, routing, `_only_nodes:${primary.node}`);
    } catch (error) {
      this.knownPrimaries.delete(routing);
      throw error;
    }
    const after = await this.primaryCopy(routing);
    this.knownPrimaries.delete(routing);
    if (this.knownPrimaries.size >= KNOWN_PRIMARIES) this.knownPrimaries.delete(this.knownPrimaries.keys().next().value!);
    this.knownPrimaries.set(routing, after);
    if (after.allocationId !== primary.allocationId) {
      throw new PrimaryUnsettledError(
        {
          operation: 'search below',
        },
        `The lock index's primary shard moved during the search below ${query.path ?? query.namespace}`,
      );
    }
    return result;
  }

  /**
   * The primary copy of the shard that `routing` leads to. With the routing, `_search_shards` answers
   * that one shard's copies (any lock index, one shard or several); a namespace must live on exactly
   * one shard with exactly one primary, whose writes share one sequence.
   */
  private async primaryCopy(routing: string): Promise<PrimaryCopy> {
    let response: estypes.SearchShardsResponse;
    try {
      response = await this.client.searchShards({ index: this.index, routing }, readOptions());
    } catch (error) {
      throw this.translate(error, 'search shards', this.index);
    }
    const primaries = response.shards.length === 1 ? response.shards[0]!.filter((copy) => copy.primary) : [];
    if (primaries.length !== 1) {
      throw new StoreRejectedError(
        { operation: 'search shards' },
        `A namespace of the lock index must live on exactly one shard with one primary (found ${response.shards.length} shards, ${response.shards.flat().filter((copy) => copy.primary).length} primaries for routing "${routing}"): its writes must share one sequence`,
      );
    }
    const copy = primaries[0]!;
    const node = copy.node;
    const allocationId = copy.allocation_id?.id;
    if (copy.state !== 'STARTED' || !node || !allocationId) {
      throw new PrimaryUnsettledError({ operation: 'search shards' }, `The lock index's primary shard is ${copy.state.toLowerCase()}`);
    }
    return { node, allocationId };
  }

  private async searchBelow(query: BelowQuery, routing: string, preference: string): Promise<BelowResult> {
    const below: StoredLock[] = [];
    let self: StoredLock | null = null;
    let after: estypes.SortResults | undefined;
    for (let page = 0; page < BELOW_PAGES; page++) {
      const hits = await this.search('search below', {
        query: {
          bool: {
            should: [
              { ids: { values: [query.selfDocId] } },
              {
                bool: {
                  filter: [{ term: { namespace: query.namespace } }, ...belowFilter(belowScopeOf(query)), { range: { maxExpiresAt: { gt: query.liveAfter } } }],
                },
              },
            ],
            minimum_should_match: 1,
          },
        },
        sort: [{ lockId: 'asc' }],
        size: BELOW_PAGE_SIZE,
        routing,
        preference,
        ...(after ? { search_after: after } : {}),
      });
      for (const hit of hits) {
        if (hit.lock.docId === query.selfDocId) self = hit.lock;
        else below.push(hit.lock);
      }
      if (hits.length < BELOW_PAGE_SIZE) return { self, below };
      after = hits.at(-1)!.sort;
    }
    throw new StoreRejectedError(
      {
        operation: 'search below',
      },
      `More than ${BELOW_PAGES * BELOW_PAGE_SIZE} live locks below ${query.path ?? `the root of ${query.namespace}`}: too many for a lock on it to wait for`,
    );
  }

  /** Best effort (housekeeping, never a lock's path): a failure leaves them for the next sweep. */
  async removeStrays(): Promise<number> {
    try {
      return (await removeStrays(this.client, this.index)).length;
    } catch (error) {
      throw this.translate(error, 'remove strays', this.index);
    }
  }

  describe(): Promise<LockIndexFacts> {
    return describeLockIndex(this.client, this.index);
  }

  /** One request: the mapping's `_meta` (shared-settings.ts). A lock index made before it recorded them is said once, on stderr. */
  async sharedSettings(): Promise<{ index: string; recorded?: SharedSettings }> {
    let recorded: SharedSettings | undefined;
    try {
      recorded = await readSharedSettings(this.client, this.index, readOptions());
    } catch (error) {
      throw this.translate(error, 'read the shared settings', this.index);
    }
    if (!recorded) {
      console.warn(
        `the lock index ${this.index} records no shared settings (_meta.${SHARED_SETTINGS_META}: it was made before they were recorded), so this process uses its own, which every process must then be given alike; record them once with \`npm run index:create -- --record-settings\``,
      );
    }
    return { index: this.index, ...(recorded ? { recorded } : {}) };
  }

  private async search(operation: string, request: Omit<estypes.SearchRequest, 'index'>): Promise<Array<{ lock: StoredLock; sort?: estypes.SortResults }>> {
    try {
      const response = await this.client.search<LockDocument>({ index: this.index, seq_no_primary_term: true, ...request }, readOptions());
      return response.hits.hits.map((hit) => ({ lock: storedFromHit(hit), ...(hit.sort ? { sort: hit.sort } : {}) }));
    } catch (error) {
      throw this.translate(error, operation, this.index);
    }
  }
}
