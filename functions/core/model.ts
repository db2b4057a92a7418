/** The lock model: what callers ask for, what the index stores, what the engine answers. */
/** A decimal integer string (fencing.ts says how it is made); compare with `compareFencingTokens` or `BigInt`, never as text of different lengths. */
export type FencingToken = string;

export type Granularity = 'global' | 'document' | 'tree';
export type RequestedMode = 'exclusive' | 'shared';
/** Multi-granularity modes: intention shared/exclusive on ancestors, shared/exclusive on the target. */
export type HolderMode = 'IS' | 'IX' | 'S' | 'X';

export type LockTarget =
  | { namespace: string; granularity: 'global' }
  | { namespace: string; granularity: 'document'; ids: string[] }
  | { namespace: string; granularity: 'tree'; path: string };

export interface AcquireRequest {
  target: LockTarget;
  mode: RequestedMode;
  owner: string;
  ttlMs: number;
  waitMs: number;
  requestId?: string;
}

/** One lock document to take, in the order every caller takes them. */
export interface PlannedKey {
  docId: string;
  namespace: string;
  granularity: Granularity;
  /** `*` for global, the id for document, the path for tree. */
  key: string;
  mode: HolderMode;
}

/** One holder's share of a lock document. The lease secret is never stored, only its hash. */
export interface StoredHolder {
  lease: string;
  proof: string;
  owner: string;
  mode: HolderMode;
  expiresAt: number;
  grantedAt: number;
  /**
   * Null only for the holder inserted by the write that produced the document's current
   * (_primary_term, _seq_no): its fencing token is that pair, filled in by the next write.
   */
  fence: FencingToken | null;
  request: string | null;
  /**
   * With `request`: a hash of the call's target, mode and owner. A requestId names one call; a
   * holder of the same requestId but another call is a conflict, never a retry.
   */
  call?: string | null;
  /**
   * The holder of an earlier delivery of the same call that this one took over: put back if this
   * delivery fails before its grant, unless that earlier delivery has given the key up meanwhile.
   */
  restores?: StoredHolder | null;
}

export interface LockDocument {
  namespace: string;
  granularity: Granularity;
  key: string;
  lockId: string;
  holders: StoredHolder[];
  /** Absent when nobody holds the document (a tree node kept for `lockedBelow`): sweeps and live searches skip it. */
  minExpiresAt?: number;
  maxExpiresAt?: number;
  updatedAt: number;
  /**
   * Tree locks: some lock below this path has been taken, so a lock on it must look for live locks
   * below (docs/tree-locks.md). Set once by the first lock below, never cleared: a document that has
   * it is kept, with no holders, when its last holder goes.
   */
  lockedBelow?: boolean;
}

export interface HolderView {
  owner: string;
  mode: HolderMode;
  expiresAt: number;
  fencingToken: FencingToken;
  expired: boolean;
}

export interface ConflictingKey {
  key: string;
  granularity: Granularity;
  requestedMode: HolderMode;
  holders: Array<{ owner: string; mode: HolderMode; expiresAt: number }>;
  /**
   * Why a holder that is not of an incompatible mode blocks: it holds the same requestId for another
   * call (`request_id_reused`), or it is a concurrent delivery of this very call that got there first
   * while this one already held other keys (`duplicate_in_progress`).
   */
  reason?: 'request_id_reused' | 'duplicate_in_progress';
}

export interface GrantedKey {
  key: string;
  mode: HolderMode;
  fencingToken: FencingToken;
}

export interface Grant {
  leaseToken: string;
  leaseId: string;
  /** The largest fencing token of the set; strictly larger than any earlier grant's token on any of these keys. */
  fencingToken: FencingToken;
  expiresAt: number;
  ttlMs: number;
  target: LockTarget;
  mode: RequestedMode;
  owner: string;
  keys: GrantedKey[];
  /**
   * True when this call took over the live grant of an earlier call with the same requestId, target,
   * mode and owner (a retry, or a duplicate delivery): that earlier lease is revoked and this grant's
   * fencing token is larger than its.
   */
  reused: boolean;
}

export interface Renewal {
  leaseToken: string;
  leaseId: string;
  fencingToken: FencingToken;
  expiresAt: number;
  ttlMs: number;
}

export type ReleaseOutcome = 'released' | 'expired' | 'not_held' | 'partially_held';

export interface Release {
  leaseId: string;
  outcome: ReleaseOutcome;
  releasedKeys: string[];
  missingKeys: string[];
}

export interface LockState {
  key: string;
  granularity: Granularity;
  namespace: string;
  holders: HolderView[];
}

export interface SweepReport {
  scanned: number;
  deletedLocks: number;
  prunedHolders: number;
  conflicts: number;
  batches: number;
}
