/** Log and metric context (namespace, granularity, key) from a request or a lease token. */
import { decodeToken } from '../core/lease-token.js';
import type { LockTarget } from '../core/index.js';
import type { Scope } from './handler.js';

const MAX_KEY_CHARS = 200;

export function keyOf(target: { granularity: string; ids?: string[] | undefined; path?: string | undefined }): string {
  if (target.granularity === 'document' && target.ids) {
    const joined = target.ids.join(',');
    return joined.length > MAX_KEY_CHARS ? `${joined.slice(0, MAX_KEY_CHARS)}…(${target.ids.length} ids)` : joined;
  }
  if (target.granularity === 'tree' && target.path !== undefined) return target.path.slice(0, MAX_KEY_CHARS);
  return '*';
}

export function scopeOfTarget(target: { namespace: string; granularity: string; ids?: string[] | undefined; path?: string | undefined }): Scope {
  return { namespace: target.namespace, granularity: target.granularity, key: keyOf(target) };
}

/** The token names its lease's target; an unreadable token gives no scope (the engine refuses it with a 400). */
export function scopeOfToken(leaseToken: string): Scope {
  try {
    const { target } = decodeToken(leaseToken);
    return scopeOfTarget(target as LockTarget & { ids?: string[]; path?: string });
  } catch {
    return {};
  }
}
