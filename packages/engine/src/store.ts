/** What the engine needs from the lock index. Only functions/store implements it with Elasticsearch. */
import type { StoreRejectedError, StoreUnavailableError } from './errors.js';
import type { Granularity, LockDocument, StoredTicket } from './model.js';
import type { SharedSettings } from './settings.js';

export interface StoredLock {
  docId: string;
  seqNo: number;
  primaryTerm: number;
  /**
   * The concrete index (the lock index's incarnation) the document lives in. Sequence numbers
   * restart in a re-created index, so a (seqNo, primaryTerm) pair means something only together with it.
   */
  index: string;
  /** That incarnation's fencing epoch (packages/engine/src/fencing.ts); 0 or absent for a lock index made before epochs. */
  epoch?: number;
  body: LockDocument;
}

/** What a write did to a lock's queue: waiters it reserved the lock for, and tickets that left unserved. The store ignores it; the engine wakes or tells those waiters once the write applied. */
export interface QueueEffects {
  reserved: StoredTicket[];
  dropped: StoredTicket[];
}

export type WriteOp = (
  | { kind: 'create'; docId: string; body: LockDocument }
  /**
   * `index` on a conditional write: the incarnation the condition was read in. A (seqNo, primaryTerm)
   * means something only there (sequence numbers restart in a re-created index), so the write applies
   * only in that incarnation; one that is gone answers `missing`. Absent: the lock index (the alias).
   */
  | { kind: 'replace'; docId: string; body: LockDocument; ifSeqNo: number; ifPrimaryTerm: number; index?: string }
  | { kind: 'delete'; docId: string; ifSeqNo: number; ifPrimaryTerm: number; index?: string }
) & { queueEffects?: QueueEffects };

export type WriteOutcome =
  | { ok: true; docId: string; seqNo: number; primaryTerm: number; index: string; epoch?: number }
  /** `conflict`: the document changed (or exists, for a create); `missing`: it is gone. */
  | { ok: false; docId: string; reason: 'conflict' | 'missing' }
  /**
   * This op failed on its own while the others of the same request got their outcomes (a bulk
   * item error). The op did not apply unless `error.context.ambiguous` says it may have.
   */
  | { ok: false; docId: string; reason: 'error'; error: StoreUnavailableError | StoreRejectedError };

export interface ListQuery {
  namespace?: string;
  granularity?: Granularity;
  owner?: string;
  /** Tree granularity: the path itself and everything under it. */
  pathPrefix?: string;
  /** Holders whose lease ended before this instant are left out when `liveAfter` is given. */
  liveAfter?: number;
  limit: number;
}

export interface ExpiredPage {
  locks: StoredLock[];
  /** Pass back to get the next page; absent on the last one. */
  next?: unknown;
}

export interface BelowQuery {
  namespace: string;
  /**
   * A tree path: the search covers the tree documents whose key starts with `<path>/`. Absent: every
   * lock of the namespace below its global lock (the `below` rules of granularity/tree.ts and global.ts).
   */
  path?: string;
  /** The path's own document: returned as the copy that answered sees it (`self`), whatever its holders. */
  selfDocId: string;
  /** Only documents with a holder whose lease ends after this instant. */
  liveAfter: number;
  /**
   * false: search the lock index as its last refresh left it, without forcing one (the caller checks
   * `self` and asks again until the index's scheduled refresh, shared by every caller, has made its
   * write searchable). Default: force a refresh first.
   */
  refresh?: boolean;
}

export interface BelowResult {
  /** The path's own document as the answering copy sees it: shows whether that copy has seen our latest write. */
  self: StoredLock | null;
  below: StoredLock[];
}

/** The lock index as an operator sees it: which incarnation, its shards, and its documents (LockStore.describe). */
export interface LockIndexFacts {
  index: string;
  incarnation: string;
  epoch: number;
  shards: { primaries: number; replicas: number };
  /** Every document, up to the store's scan limit (`complete` false when it stopped there). */
  documents: StoredLock[];
  complete: boolean;
}

export interface LockStore {
  /**
   * Realtime reads: a write is visible to the next read without a refresh. Missing documents map to
   * null. Any copy may answer, so during a partition a cut-off copy can answer with an old state:
   * never conclude "not held" from this alone.
   */
  read(docIds: readonly string[]): Promise<Map<string, StoredLock | null>>;
  /**
   * Realtime reads answered by the current primary through the write path (a copy cut off from the
   * cluster refuses them): the ground for a negative conclusion ("not held", "lost").
   */
  readPrimary(docIds: readonly string[]): Promise<Map<string, StoredLock | null>>;
  /**
   * Applies ops in order (one round trip); each op succeeds or fails on its own. Never creates the
   * lock index. Throws only when the request as a whole fails: unreachable, timed out (then the ops
   * may have applied: `ambiguous`), or refused.
   */
  write(ops: readonly WriteOp[]): Promise<WriteOutcome[]>;
  /**
   * `write`, then a primary read of `docIds` in the same request: each read sees the primary after
   * the writes (a request names one namespace, whose keys live on one shard, whose primary runs the items in order). A
   * read that failed on its own is left out of `read`.
   */
  writeThenRead(ops: readonly WriteOp[], docIds: readonly string[]): Promise<{ outcomes: WriteOutcome[]; read: Map<string, StoredLock | null> }>;
  /**
   * Removes what writes to a left incarnation can leave outside the lock index: an empty index that a
   * late conditional write auto-created under that incarnation's name (it never holds a document, so
   * nothing is lost). The sweeper's housekeeping; the number removed.
   */
  removeStrays?(): Promise<number>;
  /** Documents holding at least one lease that ended before `before` (search: sees refreshed data only). */
  findExpired(before: number, size: number, after?: unknown): Promise<ExpiredPage>;
  list(query: ListQuery): Promise<StoredLock[]>;
  /**
   * Makes every write searchable (a refresh of the lock index, unless `query.refresh` is false), then finds the tree documents below
   * a path that have a live holder, on the primary: every write the primary applied before the
   * caller's own is there. `self` shows whether the answering copy had the caller's write (a copy
   * that is no longer the primary, cut off from the cluster, may not).
   */
  findLiveBelow(query: BelowQuery): Promise<BelowResult>;
  /** For operators (`status`): a scan of the whole lock index, never on a lock's path. A store without it cannot report status. */
  describe?(): Promise<LockIndexFacts>;
  /**
   * The shared settings the lock index records (settings.ts, SHARED_SETTINGS), and its name: read once
   * per engine, before its first call. `recorded` is absent for a lock index made before they were
   * recorded. A store without it (one in memory) leaves each engine its own.
   */
  sharedSettings?(): Promise<{ index: string; recorded?: SharedSettings }>;
}
