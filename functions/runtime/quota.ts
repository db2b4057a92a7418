/**
 * Quotas on held locks: at most LOCK_MAX_LOCKS_PER_OWNER live lock keys per owner (across namespaces)
 * and LOCK_MAX_LOCKS_PER_NAMESPACE per namespace, checked before an acquire reaches the engine.
 *
 * A guard rail against one caller holding a namespace (500 ids for 15 minutes), not a safety
 * property: the count is a search of the lock index (functions/store/live-locks.ts), about a second
 * behind, and concurrent acquires do not see each other, so a burst can pass a limit by what it asks
 * for at once. Mutual exclusion never depends on it: the engine's conditional writes decide who
 * holds a key whatever this says. Without a limit configured nothing is checked and no request is
 * made.
 */
import { QuotaExceededError } from '../../packages/engine/src/errors.js';
import type { LiveLockCounts, LiveLockQuery } from '../store/live-locks.js';

export interface QuotaLimits {
  perOwner?: number;
  perNamespace?: number;
}

/** What an acquire would add: `keys` lock documents (ids of a document lock; 1 for global and tree). */
export interface QuotaRequest {
  namespace: string;
  owner: string;
  keys: number;
}

export type QuotaCheck = (request: QuotaRequest) => Promise<void>;

/** The check for these limits, or undefined when there is none (then the caller skips it: no request at all). */
export function createQuotaCheck(
  limits: QuotaLimits,
  count: (query: LiveLockQuery) => Promise<LiveLockCounts>,
  now: () => number = Date.now,
): QuotaCheck | undefined {
  const { perOwner, perNamespace } = limits;
  if (perOwner === undefined && perNamespace === undefined) return undefined;
  return async ({ namespace, owner, keys }) => {
    const counts = await count({
      ...(perNamespace !== undefined ? { namespace } : {}),
      ...(perOwner !== undefined ? { owner } : {}),
      liveAfter: now(),
    });
    if (perOwner !== undefined && (counts.owner ?? 0) + keys > perOwner) {
      throw new QuotaExceededError({ per: 'owner', subject: owner, limit: perOwner, held: counts.owner ?? 0, requested: keys });
    }
    if (perNamespace !== undefined && (counts.namespace ?? 0) + keys > perNamespace) {
      throw new QuotaExceededError({ per: 'namespace', subject: namespace, limit: perNamespace, held: counts.namespace ?? 0, requested: keys });
    }
  };
}
