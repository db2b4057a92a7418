/**
 * A real Elasticsearch store with a hook around each call, to put a pause, another caller's request
 * or a lost answer exactly between two of the engine's calls. Every answer still comes from the real
 * node; what a single healthy node cannot produce on demand (a chosen interleaving, a stall past the
 * TTL, an answer lost after the write applied, a stale copy's reply) is made by the hook, and each
 * test says which. The fault runner uses it for the faults that act inside one client's call, the
 * directory-lock benchmark to time the search below or to put another read in its place.
 */
import type { BelowQuery, BelowResult, LockStore, StoredLock, WriteOp, WriteOutcome } from '../../packages/engine/src/store.js';

type Reads = Map<string, StoredLock | null>;

export interface StoreHooks {
  read?: (ids: readonly string[], next: (ids: readonly string[]) => Promise<Reads>, call: number) => Promise<Reads>;
  readPrimary?: (ids: readonly string[], next: (ids: readonly string[]) => Promise<Reads>, call: number) => Promise<Reads>;
  write?: (ops: readonly WriteOp[], next: (ops: readonly WriteOp[]) => Promise<WriteOutcome[]>, call: number) => Promise<WriteOutcome[]>;
  findLiveBelow?: (query: BelowQuery, next: (query: BelowQuery) => Promise<BelowResult>, call: number) => Promise<BelowResult>;
}

export function interpose(
  store: LockStore,
  hooks: StoreHooks,
): LockStore & { calls: { read: number; readPrimary: number; write: number; findLiveBelow: number } } {
  const calls = { read: 0, readPrimary: 0, write: 0, findLiveBelow: 0 };
  return {
    calls,
    read: (ids) => {
      calls.read++;
      return hooks.read ? hooks.read(ids, (again) => store.read(again), calls.read) : store.read(ids);
    },
    readPrimary: (ids) => {
      calls.readPrimary++;
      return hooks.readPrimary ? hooks.readPrimary(ids, (again) => store.readPrimary(again), calls.readPrimary) : store.readPrimary(ids);
    },
    write: (ops) => {
      calls.write++;
      return hooks.write ? hooks.write(ops, (again) => store.write(again), calls.write) : store.write(ops);
    },
    // The write hook sees a write-then-read as its writes; the reads ride along with whatever `next` sent.
    writeThenRead: async (ops, ids) => {
      let read = new Map<string, StoredLock | null>();
      const send = async (again: readonly WriteOp[]): Promise<WriteOutcome[]> => {
        const result = await store.writeThenRead(again, ids);
        read = result.read;
        return result.outcomes;
      };
      calls.write++;
      const outcomes = hooks.write ? await hooks.write(ops, send, calls.write) : await send(ops);
      return { outcomes, read };
    },
    findExpired: (before, size, after) => store.findExpired(before, size, after),
    list: (query) => store.list(query),
    findLiveBelow: (query) => {
      calls.findLiveBelow++;
      return hooks.findLiveBelow ? hooks.findLiveBelow(query, (again) => store.findLiveBelow(again), calls.findLiveBelow) : store.findLiveBelow(query);
    },
  };
}
