/** Engine results as the JSON the functions answer (HTTP body and direct-invocation result alike): the wire contract's types. */
import type {
  CompletedBody,
  DrainedBody,
  GrantBody,
  LockIndexStatusBody,
  LockStateBody,
  LockStatesBody,
  QueuedBody,
  ReleaseResultBody,
  RenewalBody,
  RevocationBody,
  SweepReportBody,
  TargetBody,
} from '../../client/src/wire.js';
import type * as Engine from './index.js';
import { targetBody } from './index.js';

export type { GrantBody, LockStateBody, ReleaseResultBody, RenewalBody } from '../../client/src/wire.js';

const iso = (ms: number): string => new Date(ms).toISOString();

export function presentGrant(grant: Engine.Grant): GrantBody {
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
    ...(grant.waitedMs !== undefined ? { waitedMs: grant.waitedMs } : {}),
    ...(grant.permits !== undefined ? { permits: { ...grant.permits } } : {}),
    ...(grant.missingKeyPath !== undefined ? { missingKeyPath: grant.missingKeyPath } : {}),
  };
}

/** A target as a request names it: what a waiter woken to claim sends back. */
export const presentTarget = (target: Engine.LockTarget): TargetBody => targetBody(target);

export function presentQueued(queued: Engine.Queued): QueuedBody {
  return {
    status: 'queued',
    ticket: queued.ticket,
    ahead: queued.ahead,
    expiresAt: iso(queued.expiresAt),
    expiresAtMs: queued.expiresAt,
    ...(queued.reservedUntil !== undefined ? { reservedUntilMs: queued.reservedUntil } : {}),
    ...(queued.claimed ? { claimed: true as const } : {}),
    namespace: queued.target.namespace,
    granularity: queued.target.granularity,
    mode: queued.mode,
    owner: queued.owner,
  };
}

export function presentCompleted(done: Engine.CompletedWork): CompletedBody {
  return {
    status: 'completed',
    keyHash: done.keyHash,
    ...(done.result !== undefined ? { result: done.result } : {}),
    owner: done.owner,
    fencingToken: done.fencingToken,
    recordedAt: iso(done.recordedAt),
    expiresAt: iso(done.expiresAt),
    expiresAtMs: done.expiresAt,
  };
}

/** An acquire's answer: the grant, the waiter's place in the queue, or the recorded result of completed work. */
export function presentAcquired(outcome: Engine.Grant | Engine.Queued | Engine.CompletedWork): GrantBody | QueuedBody | CompletedBody {
  if (!('status' in outcome)) return presentGrant(outcome);
  return outcome.status === 'queued' ? presentQueued(outcome) : presentCompleted(outcome);
}

export function presentRenewal(renewal: Engine.Renewal): RenewalBody {
  return {
    leaseToken: renewal.leaseToken,
    fencingToken: renewal.fencingToken,
    expiresAt: iso(renewal.expiresAt),
    expiresAtMs: renewal.expiresAt,
    ttlMs: renewal.ttlMs,
  };
}

export function presentRelease(release: Engine.Release): ReleaseResultBody {
  return {
    outcome: release.outcome,
    releasedKeys: release.releasedKeys,
    missingKeys: release.missingKeys,
    ...(release.recorded ? { recorded: release.recorded } : {}),
  };
}

export function presentStates(states: Engine.LockState[]): LockStatesBody {
  return { locks: states.map(presentState) };
}

export function presentState(state: Engine.LockState): LockStateBody {
  return {
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
      ...(holder.permits !== undefined ? { permits: holder.permits } : {}),
    })),
    ...(state.permitLimit !== undefined ? { permitLimit: state.permitLimit } : {}),
  };
}

export function presentSweep(report: Engine.SweepReport): SweepReportBody {
  return { ...report };
}

export function presentRevocation(revocation: Engine.Revocation): RevocationBody {
  return { ...revocation, target: presentTarget(revocation.target), revoked: revocation.revoked.map((holder) => ({ ...holder })) };
}

export function presentDrained(drained: Engine.Drained): DrainedBody {
  return { ...drained, target: presentTarget(drained.target), dropped: drained.dropped.map((ticket) => ({ ...ticket })) };
}

export function presentStatus(status: Engine.LockIndexStatus): LockIndexStatusBody {
  return { ...status, shards: { ...status.shards }, oldestLease: status.oldestLease ? { ...status.oldestLease } : null };
}
