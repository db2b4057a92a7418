/** What the engine needs from the lock index. Only functions/store implements it with Elasticsearch. */
import type { Granularity, LockDocument } from './model.js';

export interface StoredLock {
  docId: string;
  seqNo: number;
  primaryTerm: number;
  body: LockDocument;
}

export type WriteOp =
  | { kind: 'create'; docId: string; body: LockDocument }
  | { kind: 'replace'; docId: string; body: LockDocument; ifSeqNo: number; ifPrimaryTerm: number }
  | { kind: 'delete'; docId: string; ifSeqNo: number; ifPrimaryTerm: number };

export type WriteOutcome =
  | { ok: true; docId: string; seqNo: number; primaryTerm: number }
  /** `conflict`: the document changed (or exists, for a create); `missing`: it is gone. */
  | { ok: false; docId: string; reason: 'conflict' | 'missing' };

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

export interface LockStore {
  /** Realtime reads: a write is visible to the next read without a refresh. Missing documents map to null. */
  read(docIds: readonly string[]): Promise<Map<string, StoredLock | null>>;
  /** Applies ops in order (one round trip); each op succeeds or fails on its own. Throws only when the store is unreachable or refuses the request. */
  write(ops: readonly WriteOp[]): Promise<WriteOutcome[]>;
  /** Documents holding at least one lease that ended before `before` (search: sees refreshed data only). */
  findExpired(before: number, size: number, after?: unknown): Promise<ExpiredPage>;
  list(query: ListQuery): Promise<StoredLock[]>;
}
