/**
 * A LockStore in memory, with the behaviour the engine relies on from Elasticsearch (see
 * test/store/contract.ts, which it passes together with the real store): conditional writes on
 * (seq_no, primary term), one sequence for the whole index, realtime reads, per-item bulk results,
 * search over expiries. It exists for the interleaving tests, which must order every store call of
 * many concurrent operations and run thousands of schedules a second; everything else runs on the
 * real node.
 *
 * It also keeps a second copy of the index (a replica) that may lag behind the primary, for what the
 * contract allows of a plain `read`: any copy may answer it, so during a partition a copy cut off
 * from the cluster answers with an old state. `lagBehind()` cuts the copy off; from then on it keeps
 * the state it had (one earlier point of the primary's history for all documents), and
 * `catchUp(n)` replays the next n writes it missed in the primary's order. `lagBehind(d)` makes it
 * trail the primary instead, each document up to d of its own writes behind: a replica applies the
 * writes of one document in order, but not those of different documents in the primary's order
 * (Elasticsearch replicates them concurrently). So each document the copy shows is in a state the
 * primary really had at an earlier point of its history, never an invented one, and a document's
 * state in the copy never moves back. A search below answered by the copy comes from one point of
 * the history for all documents, as from a deposed primary. `read`, `readPrimary`, the writes and
 * `writeThenRead` always answer from the primary; only `readFromCopy` and `findLiveBelowOnCopy`
 * answer from the copy, and a caller (the scheduled store of the interleaving tests) picks them.
 */
import { StoreRejectedError } from './errors.js';
import type { LockDocument } from './model.js';
import type { BelowQuery, BelowResult, ExpiredPage, ListQuery, LockIndexFacts, LockStore, StoredLock, WriteOp, WriteOutcome } from './store.js';

interface Entry {
  seqNo: number;
  primaryTerm: number;
  body: LockDocument;
}

/** What a copy of the index that can fall behind the primary offers (MemoryLockStore has one). */
export interface LaggingCopy {
  /**
   * Lets the copy fall behind: with no argument it is cut off and keeps the state it has until
   * `catchUp`; with `writes` it trails the primary, each document at most that many of its own
   * writes behind. A copy that lags already keeps its state and takes the new limit.
   */
  lagBehind(writes?: number): void;
  /** Replays the next `writes` writes the copy missed (all by default); once it has them all, it follows the primary again. */
  catchUp(writes?: number): void;
  /** How many of the primary's writes the copy has not applied (0: it shows what the primary shows). */
  readonly copyLag: number;
  /** `read`, answered by the copy. */
  readFromCopy(docIds: readonly string[]): Promise<Map<string, StoredLock | null>>;
  /**
   * `findLiveBelow`, answered as a deposed primary would: from one earlier point of the primary's
   * history for every document (the copy's oldest missed write not yet applied), `self` too.
   */
  findLiveBelowOnCopy(query: BelowQuery): Promise<BelowResult>;
}

let incarnations = 0;

export class MemoryLockStore implements LockStore, LaggingCopy {
  private docs = new Map<string, Entry>();
  /**
   * The lagging copy while it lags: its documents; the writes it has still to apply, in the
   * primary's order (null: a delete), each with its place in `since`; and every write of the primary
   * since the copy fell behind, with the entry it replaced (to find the one point of the primary's
   * history a search answers from). Entries are never changed in place, so sharing them is safe.
   * Undefined while the copy is in step with the primary.
   */
  private copy: { docs: Map<string, Entry>; missed: Array<[string, Entry | null, number]>; since: Array<[string, Entry | null]>; trailing: number } | undefined;
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
    this.copy = undefined;
  }

  /** Like creating the lock index anew: a new incarnation whose sequence starts over. */
  recreate(): void {
    this.exists = true;
    this.docs.clear();
    this.copy = undefined;
    this.nextSeqNo = 0;
    this.primaryTerm = 1;
    this.incarnation = `memory-locks-${++incarnations}`;
    this.epoch++;
  }

  /**
   * Like adopting a restored copy of the lock index as the next incarnation (index:create --adopt): the
   * documents as they are, with their sequence numbers, in a new incarnation with the next epoch. A
   * write decided on the old incarnation no longer applies; holders and tickets carry on.
   */
  adoptAsNextIncarnation(): void {
    this.copy = undefined;
    this.incarnation = `memory-locks-${++incarnations}`;
    this.epoch++;
  }

  /** Every document, as a read would see it (for checks after a run). */
  snapshot(): StoredLock[] {
    return this.snapshotOf(this.docs);
  }

  /** The current incarnation's fencing epoch. */
  get currentEpoch(): number {
    return this.epoch;
  }

  /** One document as the primary has it, not copied (a checker's look, many times a step): never change it. */
  peek(docId: string): StoredLock | null {
    const entry = this.docs.get(docId);
    return entry ? { docId, seqNo: entry.seqNo, primaryTerm: entry.primaryTerm, index: this.incarnation, epoch: this.epoch, body: entry.body } : null;
  }

  /** Every document's body as the primary has it, not copied: never change them. */
  bodies(): IterableIterator<LockDocument> {
    return [...this.docs.values()].map((entry) => entry.body).values();
  }

  lagBehind(writes = Number.POSITIVE_INFINITY): void {
    this.copy ??= { docs: new Map(this.docs), missed: [], since: [], trailing: writes };
    this.copy.trailing = writes;
    this.keepWithin();
  }

  catchUp(writes = Number.POSITIVE_INFINITY): void {
    if (!this.copy) return;
    this.replay(this.copy, writes);
    if (this.copy.missed.length === 0) this.copy = undefined;
  }

  /** A trailing copy applies, document by document, the writes more than its distance behind (a cut-off one nothing). */
  private keepWithin(): void {
    const copy = this.copy;
    if (!copy || copy.trailing === Number.POSITIVE_INFINITY) return;
    const pending = new Map<string, number>();
    for (const [docId] of copy.missed) pending.set(docId, (pending.get(docId) ?? 0) + 1);
    copy.missed = copy.missed.filter(([docId, entry]) => {
      const left = pending.get(docId)!;
      if (left <= copy.trailing) return true;
      pending.set(docId, left - 1);
      if (entry) copy.docs.set(docId, entry);
      else copy.docs.delete(docId);
      return false;
    });
  }

  private replay(copy: NonNullable<MemoryLockStore['copy']>, writes: number): void {
    for (const [docId, entry] of copy.missed.splice(0, writes)) {
      if (entry) copy.docs.set(docId, entry);
      else copy.docs.delete(docId);
    }
  }

  get copyLag(): number {
    return this.copy?.missed.length ?? 0;
  }

  async readFromCopy(docIds: readonly string[]): Promise<Map<string, StoredLock | null>> {
    if (!this.exists) throw this.missingIndex('read');
    return this.readIn(this.copy?.docs ?? this.docs, docIds);
  }

  /**
   * A deposed primary answers a search from one point of the primary's history for every document
   * (a primary applies the writes in sequence order): here, the point just before the oldest write
   * the copy misses. A cut-off copy is at that point; a trailing one may have applied later writes
   * of other documents, which the search does not show.
   */
  async findLiveBelowOnCopy(query: BelowQuery): Promise<BelowResult> {
    if (!this.exists) throw this.missingIndex('search below');
    return this.searchBelow(this.prefixOfCopy(), query);
  }

  private prefixOfCopy(): ReadonlyMap<string, Entry> {
    const oldest = this.copy?.missed[0];
    if (!this.copy || !oldest) return this.copy?.docs ?? this.docs;
    const docs = new Map(this.docs);
    for (let index = this.copy.since.length - 1; index >= oldest[2]; index--) {
      const [docId, previous] = this.copy.since[index]!;
      if (previous) docs.set(docId, previous);
      else docs.delete(docId);
    }
    return docs;
  }

  private snapshotOf(docs: ReadonlyMap<string, Entry>): StoredLock[] {
    return [...docs.entries()].map(([docId, entry]) => this.stored(docId, entry));
  }

  private missingIndex(operation: string): StoreRejectedError {
    return new StoreRejectedError(
      {
        operation,
        statusCode: 404,
        reason: 'index_not_found_exception',
      },
      `The lock index "${this.index}" does not exist; create it with \`npm run index:create\``,
    );
  }

  private stored(docId: string, entry: Entry): StoredLock {
    return { docId, seqNo: entry.seqNo, primaryTerm: entry.primaryTerm, index: this.incarnation, epoch: this.epoch, body: structuredClone(entry.body) };
  }

  async read(docIds: readonly string[]): Promise<Map<string, StoredLock | null>> {
    if (!this.exists) throw this.missingIndex('read');
    return this.readIn(this.docs, docIds);
  }

  private readIn(docs: ReadonlyMap<string, Entry>, docIds: readonly string[]): Map<string, StoredLock | null> {
    return new Map(
      docIds.map((docId) => {
        const entry = docs.get(docId);
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
    // A conditional write read in an earlier incarnation: its (seq_no, term) means nothing in this one.
    if (op.kind !== 'create' && op.index !== undefined && op.index !== this.incarnation) return { ok: false, docId, reason: 'missing' };
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
    const entry = op.kind === 'delete' ? null : { seqNo, primaryTerm: this.primaryTerm, body: structuredClone(op.body) };
    if (entry) this.docs.set(docId, entry);
    else this.docs.delete(docId);
    if (this.copy) {
      this.copy.missed.push([docId, entry, this.copy.since.length]);
      this.copy.since.push([docId, current ?? null]);
      this.keepWithin();
    }
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

  async describe(): Promise<LockIndexFacts> {
    if (!this.exists) throw this.missingIndex('describe');
    return {
      index: this.index,
      incarnation: this.incarnation,
      epoch: this.epoch,
      shards: { primaries: 1, replicas: 0 },
      documents: this.snapshot(),
      complete: true,
    };
  }

  /** Every write here is searchable at once, so the refresh is implied and `self` is always current. */
  async findLiveBelow(query: BelowQuery): Promise<BelowResult> {
    if (!this.exists) throw this.missingIndex('search below');
    return this.searchBelow(this.docs, query);
  }

  private searchBelow(docs: ReadonlyMap<string, Entry>, query: BelowQuery): BelowResult {
    const entry = docs.get(query.selfDocId);
    const below = this.snapshotOf(docs).filter(
      (lock) =>
        lock.body.namespace === query.namespace &&
        (query.path === undefined ? lock.body.granularity !== 'global' : lock.body.granularity === 'tree' && lock.body.key.startsWith(`${query.path}/`)) &&
        (lock.body.maxExpiresAt ?? -Infinity) > query.liveAfter,
    );
    return { self: entry ? this.stored(query.selfDocId, entry) : null, below };
  }
}
