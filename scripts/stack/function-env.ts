/** The environment the functions get on a local stack: quiet logs, a fresh signing key, the caller's overrides, and the store they reach. */
import { randomBytes } from 'node:crypto';

/**
 * `storeEnv` (LOCK_STORE and the variables of its server, StoreEndpoint.functionEnv) comes last: the
 * functions must reach the server the stack prepared the lock index on, whatever else is set.
 */
export function functionEnv(storeEnv: Record<string, string>, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    LOCK_INDEX: process.env.LOCK_INDEX ?? 'locks',
    // A new key per stack: tokens of an earlier stack must not verify on this one.
    LOCK_TOKEN_SIGNING_KEY: randomBytes(32).toString('base64'),
    POWERTOOLS_LOG_LEVEL: 'WARN',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_TRACE_ENABLED: 'false',
    ...overrides,
    ...storeEnv,
  };
}
