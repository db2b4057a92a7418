/**
 * A LockStore in memory, with the behaviour the engine relies on from Elasticsearch (see
 * test/store/contract.ts, which it passes together with the real store): conditional writes on
 * (seq_no, primary term), one sequence for the whole index, realtime reads, per-item bulk results,
 * search over expiries. It exists for the interleaving tests, which must order every store call of
 * many concurrent operations and run thousands of schedules a second; everything else runs on the
 * real node.
 */
import { StoreRejectedError } from '../../functions/core/errors.js';
import type { LockDocument } from '../../functions/core/model.js';
import type { BelowQuery, BelowResult, ExpiredPage, ListQuery, LockStore, StoredLock, WriteOp, WriteOutcome } from '../../functions/core/store.js';

interface Entry {
  seqNo: number;
  primaryTerm: number;
  body: LockDocument;
}

let incarnations = 0;

export class MemoryLockStore implements LockStore {
  private docs = new Map<string, Entry>();
  private nextSeqNo = 0;
  private primaryTerm = 1;
  private incarnation = `memory-locks-${++incarnations}`;
  /** Each incarnation's fencing epoch is one above the one before, as index:create makes them. */
  private epoch = 0;
  private exists = true;

  constructor(readonly index = 'memory-locks') {}

  /** Like a failover: later writes carry a larger primary term. */
  promotePrimary(): void {
    this.primaryTerm++;
  }

  /** Like deleting the lock index: nothing is there, and nothing re-creates it. */
  drop(): void {
    this.exists = false;
    this.docs.clear();
  }

  /** Like creating the lock index anew: a new incarnation whose sequence starts over. */
  recreate(): void {
    this.exists = true;
    this.docs.clear();
    this.nextSeqNo = 0;
    this.primaryTerm = 1;
    this.incarnation = `memory-locks-${++incarnations}`;
    this.epoch++;
  }

  /** Every document, as a read would see it (for checks after a run). */
  snapshot(): StoredLock[] {
    return [...this.docs.entries()].map(([docId, entry]) => this.stored(docId, entry));
  }

  private missingIndex(operation: string): StoreRejectedError {
    return new StoreRejectedError(`The lock index "${this.index}" does not exist; create it with \`npm run index:create\``, {
      operation,
      statusCode: 404,
      reason: 'index_not_found_exception',
    });
  }

  private stored(docId: string, entry: Entry): StoredLock {
    return { docId, seqNo: entry.seqNo, primaryTerm: entry.primaryTerm, index: this.incarnation, epoch: this.epoch, body: structuredClone(entry.body) };
  }

  async read(docIds: readonly string[]): Promise<Map<string, StoredLock | null>> {
    if (!this.exists) throw this.missingIndex('read');
    return new Map(
      docIds.map((docId) => {
        const entry = this.docs.get(docId);
        return [docId, entry ? this.stored(docId, entry) : null];
      }),
    );
  }

  readPrimary(docIds: readonly string[]): Promise<Map<string, StoredLock | null>> {
    return this.read(docIds);
  }

  async write(ops: readonly WriteOp[]): Promise<WriteOutcome[]> {
    return ops.map((op) => this.apply(op));
  }

  async writeThenRead(ops: readonly WriteOp[], docIds: readonly string[]): Promise<{ outcomes: WriteOutcome[]; read: Map<string, StoredLock | null> }> {
    const outcomes = await this.write(ops);
    return { outcomes, read: await this.read(docIds) };
  }

  private apply(op: WriteOp): WriteOutcome {
    const { docId } = op;
    if (op.kind === 'delete' && op.index !== undefined && op.index !== this.incarnation) return { ok: false, docId, reason: 'missing' };
    if (!this.exists) return { ok: false, docId, reason: 'error', error: this.missingIndex(op.kind) };
    const current = this.docs.get(docId);
    if (op.kind === 'create') {
      if (current) return { ok: false, docId, reason: 'conflict' };
    } else {
      // Elasticsearch answers a conditional write to a missing document with a version conflict.
      if (!current) return { ok: false, docId, reason: 'conflict' };
      if (current.seqNo !== op.ifSeqNo || current.primaryTerm !== op.ifPrimaryTerm) return { ok: false, docId, reason: 'conflict' };
    }
    const seqNo = this.nextSeqNo++;
    if (op.kind === 'delete') this.docs.delete(docId);
    else this.docs.set(docId, { seqNo, primaryTerm: this.primaryTerm, body: structuredClone(op.body) });
    return { ok: true, docId, seqNo, primaryTerm: this.primaryTerm, index: this.incarnation, epoch: this.epoch };
  }

  async findExpired(before: number, size: number, after?: unknown): Promise<ExpiredPage> {
    if (!this.exists) throw this.missingIndex('sweep search');
    const [afterExpiry, afterId] = (after as [number, string] | undefined) ?? [-Infinity, ''];
    const hits = this.snapshot()
      .filter((lock) => lock.body.minExpiresAt !== undefined && lock.body.minExpiresAt < before)
      .sort((a, b) => a.body.minExpiresAt! - b.body.minExpiresAt! || (a.body.lockId < b.body.lockId ? -1 : a.body.lockId > b.body.lockId ? 1 : 0))
      .filter((lock) => lock.body.minExpiresAt! > afterExpiry || (lock.body.minExpiresAt === afterExpiry && lock.body.lockId > afterId))
      .slice(0, size);
    const last = hits.at(-1);
    return { locks: hits, ...(hits.length === size && last ? { next: [last.body.minExpiresAt, last.body.lockId] } : {}) };
  }

  async list(query: ListQuery): Promise<StoredLock[]> {
    if (!this.exists) throw this.missingIndex('list');
    const prefix = query.pathPrefix?.replace(/\/+$/, '');
    return this.snapshot()
      .filter((lock) => !query.namespace || lock.body.namespace === query.namespace)
      .filter((lock) => !query.granularity || lock.body.granularity === query.granularity)
      .filter((lock) => !query.owner || lock.body.holders.some((holder) => holder.owner === query.owner))
      .filter((lock) => query.liveAfter === undefined || (lock.body.maxExpiresAt ?? -Infinity) > query.liveAfter)
      .filter((lock) => prefix === undefined || lock.body.key === prefix || lock.body.key.startsWith(`${prefix}/`))
      .sort((a, b) => (a.body.key < b.body.key ? -1 : a.body.key > b.body.key ? 1 : 0))
      .slice(0, query.limit);
  }

  /** Every write here is searchable at once, so the refresh is implied and `self` is always current. */
  async findLiveBelow(query: BelowQuery): Promise<BelowResult> {
    if (!this.exists) throw this.missingIndex('search below');
    const entry = this.docs.get(query.selfDocId);
    const below = this.snapshot().filter(
      (lock) =>
        lock.body.namespace === query.namespace &&
        lock.body.granularity === 'tree' &&
        lock.body.key.startsWith(`${query.path}/`) &&
        (lock.body.maxExpiresAt ?? -Infinity) > query.liveAfter,
    );
    return { self: entry ? this.stored(query.selfDocId, entry) : null, below };
  }
}
