/** Log and metric context (namespace, granularity, key) from a typed request's target. */

import { logKeyOf, targetBody } from '../../packages/engine/src/granularity/index.js';
import type { LockTarget } from '../../packages/engine/src/index.js';
import type { Scope } from './handler.js';

export function scopeOfTarget(target: LockTarget): Scope {
  return { namespace: target.namespace, granularity: target.granularity, key: logKeyOf(targetBody(target)) };
}
