/**
 * Function configuration, read from the environment once per container (at cold start) and
 * validated as a whole: a bad value fails the init with every problem named, not the Nth request.
 */
import { z } from 'zod';
import { DEFAULT_SETTINGS, type SharedSettings } from '../../packages/engine/src/settings.js';
import { integer, optional } from './env.js';
import { type LockPolicy, parseLockPolicy } from './lock-policy.js';
import { readStoreConfig, type StoreConfig, storeEnv } from './store-config.js';

export type { ElasticsearchStoreConfig, OpenSearchStoreConfig, StoreConfig } from './store-config.js';

export interface FunctionConfig {
  /** The cluster that holds the lock index (LOCK_STORE: Elasticsearch or OpenSearch) and how to reach it. */
  store: StoreConfig;
  lockIndex: string;
  ttl: { defaultMs: number; minMs: number; maxMs: number };
  /**
   * MAX_CLOCK_SKEW_MS, when set. Unset: the lock index's (every process on it shares one value, recorded
   * when it was made: packages/engine/src/settings.ts, SHARED_SETTINGS); set to another value, the engine
   * refuses to work on it.
   */
  maxClockSkewMs?: number;
  /** Upper bound for `waitMs`: what fits in the function timeout after the last attempt. */
  maxWaitMs: number;
  sweep: { batchSize: number; maxBatches: number };
  /** The bounds of one lock's queue (QUEUE_MAX_TICKETS, QUEUE_WAKE_BYTES): tickets per lock, and bytes of a wake channel. */
  queue: { maxTickets: number; wakeBytes: number };
  tokenSigningKey?: Uint8Array;
  tokenSigningKeyParameter?: string;
  functionTimeoutMs?: number;
  /**
   * Whether each container creates the lock index at its first call when it is missing. Off by
   * default: a deleted lock index silently re-created by the next cold start would restart the
   * fencing tokens under holders that still carry larger ones. Create it once with `npm run index:create`.
   */
  ensureIndex: boolean;
  /** Most ids one document lock may name (LOCK_MAX_IDS_PER_REQUEST); only lower than the engine's 500. */
  maxIdsPerRequest: number;
  /**
   * Who may lock what (lock-policy.ts): LOCK_POLICY, parsed here so that a policy that does not parse
   * fails the cold start. `none` when neither it nor LOCK_POLICY_PARAMETER is set: every
   * namespace-scoped call is then refused.
   */
  policy: LockPolicy;
  /** The policy's SSM parameter / Secrets Manager secret (LOCK_POLICY_PARAMETER), read and cached by authorization.ts. */
  policyParameter?: string;
  /**
   * Whether `allow-all` read from that parameter is accepted (LOCK_POLICY_ALLOW_ALL=true: the stage
   * could package it inline, infra/lock-policy.cjs). Unset: refused, failing closed.
   */
  policyAllowAll: boolean;
  /** Limits on live locks (LOCK_MAX_LOCKS_PER_OWNER / _PER_NAMESPACE); none by default, and then no extra request. */
  quota: { perOwner?: number; perNamespace?: number };
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`Invalid function configuration: ${problems.join('; ')}`);
  }
}

const INDEX_NAME = /^[a-z0-9][a-z0-9._-]*$/;

const envSchema = z
  .object({
    ...storeEnv,
    ES_REQUEST_TIMEOUT_MS: optional(integer(100, 900_000)),
    FUNCTION_TIMEOUT_MS: optional(integer(1_000, 900_000)),
    LOCK_INDEX: optional(z.string().max(255).regex(INDEX_NAME, { error: 'must be a lowercase Elasticsearch index name' })),
    LOCK_TTL_DEFAULT_MS: optional(integer(1, 86_400_000)),
    LOCK_TTL_MIN_MS: optional(integer(1, 86_400_000)),
    LOCK_TTL_MAX_MS: optional(integer(1, 86_400_000)),
    LOCK_MAX_WAIT_MS: optional(integer(0, 900_000)),
    MAX_CLOCK_SKEW_MS: optional(integer(0, 60_000)),
    SWEEP_BATCH_SIZE: optional(integer(1, 10_000)),
    SWEEP_MAX_BATCHES: optional(integer(1, 1_000)),
    // A ticket takes up to a wake channel plus about 300 bytes of the lock document: 10,000 of the
    // largest wake channels (8 KiB) still stay well under what a request to the store may carry.
    QUEUE_MAX_TICKETS: optional(integer(1, 10_000)),
    QUEUE_WAKE_BYTES: optional(integer(1, 8_192)),
    LOCK_TOKEN_SIGNING_KEY: optional(z.string()),
    LOCK_TOKEN_SIGNING_KEY_PARAMETER: optional(z.string()),
    LOCK_ENSURE_INDEX: optional(z.enum(['true', 'false'])),
    LOCK_MAX_IDS_PER_REQUEST: optional(integer(1, DEFAULT_SETTINGS.limits.idsPerRequest)),
    LOCK_POLICY: optional(z.string()),
    LOCK_POLICY_PARAMETER: optional(z.string()),
    LOCK_POLICY_ALLOW_ALL: optional(z.enum(['true', 'false'])),
    LOCK_MAX_LOCKS_PER_OWNER: optional(integer(1, 1_000_000)),
    LOCK_MAX_LOCKS_PER_NAMESPACE: optional(integer(1, 1_000_000)),
  })
  .loose();

/**
 * The shared settings an environment gives, read as the functions read them: for the other processes
 * that build an engine or a lock index (the operator's CLI, index:create). The problems, if any, each
 * naming its variable.
 */
export function sharedSettingsFromEnv(env: Record<string, string | undefined>): SharedSettings | { problems: string[] } {
  const parsed = envSchema.pick({ MAX_CLOCK_SKEW_MS: true }).safeParse(env);
  if (!parsed.success) return { problems: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`) };
  return parsed.data.MAX_CLOCK_SKEW_MS !== undefined ? { maxClockSkewMs: parsed.data.MAX_CLOCK_SKEW_MS } : {};
}

const DEFAULT_ES_TIMEOUT_MS = 3_000;
/** What the function needs besides the Elasticsearch round trip: parsing, answering, a renewal of the log buffer. */
const TIMEOUT_MARGIN_MS = 1_000;

/** Decodes a base64 (or base64url) signing key; at least 16 bytes. */
export function decodeSigningKey(value: string): Uint8Array | string {
  const trimmed = value.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return 'must be base64';
  const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.byteLength < 16) return `must decode to at least 16 bytes (got ${bytes.byteLength})`;
  return new Uint8Array(bytes);
}

export function readConfig(env: Record<string, string | undefined> = process.env): FunctionConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`));
  }
  const e = parsed.data;
  const problems: string[] = [];

  const defaults = DEFAULT_SETTINGS;
  const ttl = {
    defaultMs: e.LOCK_TTL_DEFAULT_MS ?? defaults.ttl.defaultMs,
    minMs: e.LOCK_TTL_MIN_MS ?? defaults.ttl.minMs,
    maxMs: e.LOCK_TTL_MAX_MS ?? defaults.ttl.maxMs,
  };
  if (!(ttl.minMs <= ttl.defaultMs && ttl.defaultMs <= ttl.maxMs)) {
    problems.push(`LOCK_TTL_*: need LOCK_TTL_MIN_MS <= LOCK_TTL_DEFAULT_MS <= LOCK_TTL_MAX_MS (got ${ttl.minMs}, ${ttl.defaultMs}, ${ttl.maxMs})`);
  }

  const functionTimeoutMs = e.FUNCTION_TIMEOUT_MS;
  const requestTimeoutMs =
    e.ES_REQUEST_TIMEOUT_MS ?? (functionTimeoutMs ? Math.min(DEFAULT_ES_TIMEOUT_MS, Math.floor(functionTimeoutMs / 2)) : DEFAULT_ES_TIMEOUT_MS);
  if (functionTimeoutMs !== undefined && requestTimeoutMs + TIMEOUT_MARGIN_MS > functionTimeoutMs) {
    problems.push(`ES_REQUEST_TIMEOUT_MS (${requestTimeoutMs}) must stay at least ${TIMEOUT_MARGIN_MS} ms below FUNCTION_TIMEOUT_MS (${functionTimeoutMs})`);
  }
  // A wait must leave room for the last attempt (a few Elasticsearch round trips) before the function times out.
  const waitCeiling = functionTimeoutMs !== undefined ? Math.max(0, functionTimeoutMs - 2 * requestTimeoutMs - TIMEOUT_MARGIN_MS) : DEFAULT_SETTINGS.maxWaitMs;
  const maxWaitMs = Math.min(e.LOCK_MAX_WAIT_MS ?? waitCeiling, waitCeiling);

  let tokenSigningKey: Uint8Array | undefined;
  if (e.LOCK_TOKEN_SIGNING_KEY !== undefined) {
    const decoded = decodeSigningKey(e.LOCK_TOKEN_SIGNING_KEY);
    if (typeof decoded === 'string') problems.push(`LOCK_TOKEN_SIGNING_KEY: ${decoded}`);
    else tokenSigningKey = decoded;
  }
  if (e.LOCK_TOKEN_SIGNING_KEY && e.LOCK_TOKEN_SIGNING_KEY_PARAMETER) {
    problems.push('LOCK_TOKEN_SIGNING_KEY and LOCK_TOKEN_SIGNING_KEY_PARAMETER are both set; keep one');
  }
  const parsedPolicy = parseLockPolicy(e.LOCK_POLICY, 'LOCK_POLICY');
  if (Array.isArray(parsedPolicy)) problems.push(...parsedPolicy);
  if (e.LOCK_POLICY && e.LOCK_POLICY_PARAMETER) problems.push('LOCK_POLICY and LOCK_POLICY_PARAMETER are both set; keep one');
  const store = readStoreConfig(e, requestTimeoutMs, problems);
  if (problems.length > 0) throw new ConfigError(problems);

  return {
    store,
    lockIndex: e.LOCK_INDEX ?? 'locks',
    ttl,
    ...(e.MAX_CLOCK_SKEW_MS !== undefined ? { maxClockSkewMs: e.MAX_CLOCK_SKEW_MS } : {}),
    maxWaitMs,
    sweep: { batchSize: e.SWEEP_BATCH_SIZE ?? defaults.sweep.batchSize, maxBatches: e.SWEEP_MAX_BATCHES ?? defaults.sweep.maxBatches },
    queue: { maxTickets: e.QUEUE_MAX_TICKETS ?? defaults.queue.maxTickets, wakeBytes: e.QUEUE_WAKE_BYTES ?? defaults.queue.wakeBytes },
    ...(tokenSigningKey ? { tokenSigningKey } : {}),
    ...(e.LOCK_TOKEN_SIGNING_KEY_PARAMETER ? { tokenSigningKeyParameter: e.LOCK_TOKEN_SIGNING_KEY_PARAMETER } : {}),
    ...(functionTimeoutMs !== undefined ? { functionTimeoutMs } : {}),
    ensureIndex: e.LOCK_ENSURE_INDEX === 'true',
    maxIdsPerRequest: e.LOCK_MAX_IDS_PER_REQUEST ?? defaults.limits.idsPerRequest,
    policy: Array.isArray(parsedPolicy) ? { kind: 'none' } : parsedPolicy,
    ...(e.LOCK_POLICY_PARAMETER ? { policyParameter: e.LOCK_POLICY_PARAMETER } : {}),
    policyAllowAll: e.LOCK_POLICY_ALLOW_ALL === 'true',
    quota: {
      ...(e.LOCK_MAX_LOCKS_PER_OWNER !== undefined ? { perOwner: e.LOCK_MAX_LOCKS_PER_OWNER } : {}),
      ...(e.LOCK_MAX_LOCKS_PER_NAMESPACE !== undefined ? { perNamespace: e.LOCK_MAX_LOCKS_PER_NAMESPACE } : {}),
    },
  };
}
