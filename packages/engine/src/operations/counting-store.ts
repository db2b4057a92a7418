/** The store, counting the requests of one acquire attempt (a grant made in one request needs no second look at the primary). */
import type { BelowQuery, ListQuery, LockStore, WriteOp } from '../store.js';

/**
 * A class rather than an object of arrow functions made per attempt: the bundle keeps function names
 * (esbuild keepNames), which costs every named arrow function a defineProperty as it is made (about
 * 0.3 µs); a class's methods are made once.
 */
export class CountingStore implements LockStore {
  requests = 0;

  constructor(private readonly store: LockStore) {}

  private counted<T>(result: Promise<T>): Promise<T> {
    this.requests++;
    return result;
  }

  read(docIds: readonly string[]) {
    return this.counted(this.store.read(docIds));
  }
  readPrimary(docIds: readonly string[]) {
    return this.counted(this.store.readPrimary(docIds));
  }
  write(ops: readonly WriteOp[]) {
    return this.counted(this.store.write(ops));
  }
  writeThenRead(ops: readonly WriteOp[], docIds: readonly string[]) {
    return this.counted(this.store.writeThenRead(ops, docIds));
  }
  findExpired(before: number, size: number, after?: unknown) {
    return this.counted(this.store.findExpired(before, size, after));
  }
  list(query: ListQuery) {
    return this.counted(this.store.list(query));
  }
  findLiveBelow(query: BelowQuery) {
    return this.counted(this.store.findLiveBelow(query));
  }
}
