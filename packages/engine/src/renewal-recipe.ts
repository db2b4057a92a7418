/**
 * What a renewal in place (operations/renew-in-place.ts) writes: the lease's document again, exactly
 * as the lease's last write left it but for its expiry, without reading it. A document qualifies only
 * when it holds nothing but that one holder and the fields every grant writes (no queue, mark, note,
 * permits, earlier delivery or claimed ticket): then the lease token can carry all of it that is not
 * already there (the recipe), and the document is `lockDocument` of one holder.
 */
import type { FencingToken } from './fencing.js';
import { lockDocument } from './lock-document.js';
import type { LockDocument, PlannedKey, StoredHolder } from './model.js';
import type { StoredLock } from './store.js';

/** The holder's fields that the token does not otherwise carry. `owner`..`work` are the lease's (the same on every key). */
export interface Recipe {
  grantedAt: number;
  /** null: still pending (the holder was inserted by the version the token notes), fixed by the next write. */
  fence: FencingToken | null;
  owner: string;
  request: string | null;
  call: string | null;
  work?: string;
}

const DOCUMENT_FIELDS = new Set(['namespace', 'granularity', 'key', 'lockId', 'holders', 'minExpiresAt', 'maxExpiresAt', 'updatedAt']);
const HOLDER_FIELDS = new Set(['lease', 'proof', 'owner', 'mode', 'expiresAt', 'grantedAt', 'fence', 'request', 'call', 'work']);
const onlyFields = (object: object, allowed: ReadonlySet<string>): boolean => Object.keys(object).every((field) => allowed.has(field));

/** The recipe of a document that `rebuiltDocument` writes again exactly; undefined for any other. */
export function recipeOf(lock: StoredLock): Recipe | undefined {
  const { body } = lock;
  if (body.holders.length !== 1 || body.lockId !== lock.docId || !onlyFields(body, DOCUMENT_FIELDS)) return undefined;
  const holder = body.holders[0]!;
  if (!onlyFields(holder, HOLDER_FIELDS) || body.minExpiresAt !== holder.expiresAt || body.maxExpiresAt !== holder.expiresAt) return undefined;
  // Written by every grant (StoredHolder.call is absent only in documents from before it): rebuilt as null, so required here.
  if (holder.request === undefined || holder.call === undefined) return undefined;
  return {
    grantedAt: holder.grantedAt,
    fence: holder.fence,
    owner: holder.owner,
    request: holder.request,
    call: holder.call,
    ...(holder.work !== undefined ? { work: holder.work } : {}),
  };
}

/** The document of `key` with the lease's one holder, as the recipe says, ending at `expiresAt`; `pendingFence` for a fence still pending. */
export function rebuiltDocument(
  key: PlannedKey,
  recipe: Recipe,
  lease: { leaseId: string; proof: string },
  expiresAt: number,
  now: number,
  pendingFence: FencingToken,
): LockDocument {
  const holder: StoredHolder = {
    lease: lease.leaseId,
    proof: lease.proof,
    owner: recipe.owner,
    mode: key.mode,
    expiresAt,
    grantedAt: recipe.grantedAt,
    fence: recipe.fence ?? pendingFence,
    request: recipe.request,
    call: recipe.call,
    ...(recipe.work !== undefined ? { work: recipe.work } : {}),
  };
  return lockDocument(key, [holder], now, false);
}
