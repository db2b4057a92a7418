/** Log and metric context (namespace, granularity, key) from a request or a lease token. */
import { logKeyOf } from '../core/granularity/index.js';
import { decodeToken } from '../core/lease-token.js';
import { targetFields } from '../core/validation.js';
import type { Scope } from './handler.js';

type TargetInput = { namespace: string; granularity: string; ids?: string[] | undefined; path?: string | undefined };

export function scopeOfTarget(target: TargetInput): Scope {
  return { namespace: target.namespace, granularity: target.granularity, key: logKeyOf(target) };
}

/** The token names its lease's target; an unreadable token gives no scope (the engine refuses it with a 400). */
export function scopeOfToken(leaseToken: string): Scope {
  try {
    return scopeOfTarget(targetFields(decodeToken(leaseToken).target) as TargetInput);
  } catch {
    return {};
  }
}
