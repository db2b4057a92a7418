/** Engine results as the JSON the functions answer (HTTP body and direct-invocation result alike). */
import type { ConflictingKey, Grant, LockState, Release, Renewal, SweepReport } from '../core/index.js';

const iso = (ms: number): string => new Date(ms).toISOString();

export interface GrantBody {
  leaseToken: string;
  fencingToken: string;
  expiresAt: string;
  expiresAtMs: number;
  ttlMs: number;
  namespace: string;
  granularity: Grant['target']['granularity'];
  mode: Grant['mode'];
  owner: string;
  keys: Grant['keys'];
  reused: boolean;
}

export function presentGrant(grant: Grant): GrantBody {
  return {
    leaseToken: grant.leaseToken,
    fencingToken: grant.fencingToken,
    expiresAt: iso(grant.expiresAt),
    expiresAtMs: grant.expiresAt,
    ttlMs: grant.ttlMs,
    namespace: grant.target.namespace,
    granularity: grant.target.granularity,
    mode: grant.mode,
    owner: grant.owner,
    keys: grant.keys.map((key) => ({ key: key.key, mode: key.mode, fencingToken: key.fencingToken })),
    reused: grant.reused,
  };
}

export interface RenewalBody {
  leaseToken: string;
  fencingToken: string;
  expiresAt: string;
  expiresAtMs: number;
  ttlMs: number;
}

export function presentRenewal(renewal: Renewal): RenewalBody {
  return {
    leaseToken: renewal.leaseToken,
    fencingToken: renewal.fencingToken,
    expiresAt: iso(renewal.expiresAt),
    expiresAtMs: renewal.expiresAt,
    ttlMs: renewal.ttlMs,
  };
}

export interface ReleaseBody {
  outcome: Release['outcome'];
  releasedKeys: string[];
  missingKeys: string[];
}

export function presentRelease(release: Release): ReleaseBody {
  return { outcome: release.outcome, releasedKeys: release.releasedKeys, missingKeys: release.missingKeys };
}

export interface LockStateBody {
  key: string;
  namespace: string;
  granularity: LockState['granularity'];
  holders: Array<{ owner: string; mode: string; fencingToken: string; expiresAt: string; expiresAtMs: number; expired: boolean }>;
}

export function presentStates(states: LockState[]): { locks: LockStateBody[] } {
  return {
    locks: states.map((state) => ({
      key: state.key,
      namespace: state.namespace,
      granularity: state.granularity,
      holders: state.holders.map((holder) => ({
        owner: holder.owner,
        mode: holder.mode,
        fencingToken: holder.fencingToken,
        expiresAt: iso(holder.expiresAt),
        expiresAtMs: holder.expiresAt,
        expired: holder.expired,
      })),
    })),
  };
}

export function presentConflicts(conflicts: ConflictingKey[]) {
  return conflicts.map((conflict) => ({
    key: conflict.key,
    granularity: conflict.granularity,
    requestedMode: conflict.requestedMode,
    holders: conflict.holders.map((holder) => ({ owner: holder.owner, mode: holder.mode, expiresAt: iso(holder.expiresAt), expiresAtMs: holder.expiresAt })),
    ...(conflict.reason ? { reason: conflict.reason } : {}),
  }));
}

export function presentSweep(report: SweepReport): SweepReport {
  return { ...report };
}
