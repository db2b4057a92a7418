/**
 * The operator operations' answers (revoke, drain, status) as the lock service gives them, in
 * process and over HTTP alike. Declared here until LockService has them (issue 32): then these
 * become re-exports of the service's own types.
 */
import type { LockTarget } from '../functions/core/model.js';

export interface Revocation {
  target: LockTarget;
  by: string;
  reason: string;
  at: number;
  revoked: Array<{ key: string; leaseId: string; owner: string; mode: 'S' | 'X'; fencingToken: string; expiresAt: number }>;
  /** The revoke write's own fencing token: above every revoked holder's; null when nothing was held. */
  fencingToken: string | null;
  handedOver: number;
}

export interface Drained {
  target: LockTarget;
  by: string;
  reason: string;
  at: number;
  dropped: Array<{ key: string; ticket: string; owner: string }>;
  told: number;
}

export interface LockIndexStatus {
  index: string;
  incarnation: string;
  epoch: number;
  shards: { primaries: number; replicas: number };
  locks: number;
  holders: number;
  waiters: number;
  workRecords: number;
  oldestLease: { namespace: string; granularity: string; key: string; owner: string; grantedAt: number; expiresAt: number } | null;
  at: number;
}

/** What revoke and drain take: the target's flat fields (as the acquire takes them), why, and who. */
export interface AdminInput {
  namespace: string;
  granularity: string;
  ids?: string[];
  path?: string;
  reason: string;
  by?: string;
}
