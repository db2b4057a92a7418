/** Who an operator's revoke or drain is recorded as: the caller the platform identified, never a name the body asserts alone. */
import { type AdminRequest, UNNAMED_OPERATOR } from '../../packages/engine/src/index.js';
import type { Call } from './handler.js';

/** An IAM caller is its principal (a `by` in the body is kept beside it); a direct invocation, which carries no identity, is `direct` with the body's `by`. */
export function operatorOf(call: Call, request: AdminRequest): string {
  const caller = call.principal ?? 'unidentified';
  return request.by === UNNAMED_OPERATOR ? caller : `${caller} (as ${request.by})`;
}
