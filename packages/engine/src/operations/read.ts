/** Inspect (realtime, by target) and list (search, by namespace, owner or path prefix). */

import { aboveTarget } from '../granularity/index.js';
import { lockDocId, planKeys } from '../keys.js';
import { holderViews } from '../lock-document.js';
import type { LockState, LockTarget, RequestedMode } from '../model.js';
import type { ListQuery, StoredLock } from '../store.js';
import type { EngineContext } from './context.js';

function toState(lock: StoredLock, now: number, skewMs: number): LockState {
  const { key, granularity, namespace, permitLimit } = lock.body;
  return { key, granularity, namespace, holders: holderViews(lock, now, skewMs), ...(permitLimit !== undefined ? { permitLimit } : {}) };
}

/** Who holds each key of a target, and each key above it that can block it (tree ancestors, the namespace's global lock), now. Keys nobody holds are left out. A plain read: during a partition it may lag. */
export async function inspect(context: EngineContext, target: LockTarget, mode: RequestedMode): Promise<LockState[]> {
  const docIds = [
    ...aboveTarget(target).map(({ granularity, key }) => lockDocId(target.namespace, granularity, key)),
    ...planKeys(target, mode).map((key) => key.docId),
  ];
  const found = await context.store.read(docIds);
  const now = context.settings.now();
  return docIds.flatMap((docId) => {
    const lock = found.get(docId);
    return lock && lock.body.holders.length > 0 ? [toState(lock, now, context.settings.maxClockSkewMs)] : [];
  });
}

/** Backed by search: reflects writes after the index refreshes (about a second). */
export async function list(context: EngineContext, query: Partial<ListQuery> & { includeExpired?: boolean }): Promise<LockState[]> {
  const now = context.settings.now();
  const skew = context.settings.maxClockSkewMs;
  const locks = await context.store.list({
    ...query,
    limit: Math.min(Math.max(query.limit ?? 100, 1), 1_000),
    ...(query.includeExpired ? {} : { liveAfter: now - skew }),
  });
  return locks
    .map((lock) => toState(lock, now, skew))
    .map((state) => ({ ...state, holders: state.holders.filter((holder) => query.includeExpired || !holder.expired) }))
    .filter((state) => state.holders.length > 0 && (!query.owner || state.holders.some((holder) => holder.owner === query.owner)));
}
