/** The environment the functions get on a local stack: quiet logs, a fresh signing key, the caller's overrides. */
import { randomBytes } from 'node:crypto';

export interface EsConnection {
  url: string;
  apiKey?: string;
}

export function functionEnv(es: EsConnection, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    LOCK_INDEX: process.env.LOCK_INDEX ?? 'locks',
    // A new key per stack: tokens of an earlier stack must not verify on this one.
    LOCK_TOKEN_SIGNING_KEY: randomBytes(32).toString('base64'),
    POWERTOOLS_LOG_LEVEL: 'WARN',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_TRACE_ENABLED: 'false',
    ...overrides,
    ES_URL: overrides.ES_URL ?? es.url,
    ...(es.apiKey && !overrides.ES_API_KEY ? { ES_API_KEY: es.apiKey } : {}),
  };
}
