/**
 * Per-container wiring: configuration, Powertools (Logger, Metrics, Tracer), the search client
 * (Elasticsearch or OpenSearch, as LOCK_STORE says), the lock engine and the wake-up notifier, all
 * created once when the function's module loads. The lock index is ensured once per container: the promise is cached, and
 * forgotten only if it fails.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import {
  type LockEngine,
  type LockRequests,
  type LockService,
  type LockSettings,
  lockRequests,
  resolveSettings,
  type SettingsOverrides,
  sharedSettingsOf,
} from '../../packages/engine/src/index.js';
import type { WakeNotifier } from '../../packages/engine/src/wake.js';
import { translateError } from '../store/errors.js';
import { createLockService, ensureLockIndex } from '../store/index.js';
import { countLiveLocks } from '../store/live-locks.js';
import { createSearchClient, type SearchClient } from '../store/search-client.js';
import { type Admit, createAdmission } from './admission.js';
import { createAuthorization } from './authorization.js';
import { ConfigError, decodeSigningKey, type FunctionConfig, readConfig } from './config.js';
import { createQuotaCheck } from './quota.js';
import { pickSecret, readSecret } from './secrets.js';
import { searchConnection } from './store-config.js';
import { createWakeNotifier } from './wake/index.js';

export const SERVICE_NAME = 'es-lease-locks';
export const METRICS_NAMESPACE = 'EsLeaseLocks';

/** The engine connected to the lock index: what a handler calls. */
export interface ConnectedEngine {
  engine: LockEngine;
  /** The typed requests under the engine's own settings (its token signing key decodes lease tokens). */
  requests: LockRequests;
  /** The same engine for in-process callers with plain input (the example SQS consumer). */
  service: LockService;
  client: SearchClient;
}

export interface Runtime {
  readonly config: FunctionConfig;
  /** The engine settings the configuration gives. */
  readonly settings: Readonly<LockSettings>;
  /** The request schemas under those settings' limits: what an event is validated against, before any secret is read. */
  readonly requests: LockRequests;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly tracer: Tracer;
  /** The engine over a client whose secrets are resolved and whose lock index exists (first call per container does the work). */
  engine(): Promise<ConnectedEngine>;
  /** For /health: resolves the client only (no index creation), so a missing secret or a down cluster answers 503. */
  client(): Promise<SearchClient>;
  /** The namespace policy and the quotas (admission.ts), before the engine runs: throws AccessDeniedError / QuotaExceededError. */
  admit: Admit;
  /** Wakes queued waiters that are not in the call (Step Functions task, SQS queue, EventBridge bus): the engine's `settings.notifier`. */
  readonly notifier: WakeNotifier;
}

export interface RuntimeOptions {
  env?: Record<string, string | undefined>;
  /** Replaces secret look-ups (tests). */
  readSecret?: (reference: string, maxAgeSeconds?: number) => Promise<string>;
  /** Replaces the AWS wake-ups (tests). */
  notifier?: WakeNotifier;
}

export function createRuntime(options: RuntimeOptions = {}): Runtime {
  const env = options.env ?? process.env;
  const config = readConfig(env);
  const serviceName = env.POWERTOOLS_SERVICE_NAME || SERVICE_NAME;
  const logger = new Logger({ serviceName });
  const metrics = new Metrics({ serviceName, namespace: env.POWERTOOLS_METRICS_NAMESPACE || METRICS_NAMESPACE });
  // Inactive outside Lambda or with POWERTOOLS_TRACE_ENABLED=false; on Lambda it also traces the client's HTTP calls.
  const tracer = new Tracer({ serviceName });
  const fetchSecret = options.readSecret ?? readSecret;
  const overrides: SettingsOverrides = {
    ttl: config.ttl,
    // Unset: the lock index's value, taken by the engine at its first call.
    ...(config.maxClockSkewMs !== undefined ? { maxClockSkewMs: config.maxClockSkewMs } : {}),
    maxWaitMs: config.maxWaitMs,
    sweep: config.sweep,
    queue: config.queue,
    limits: { idsPerRequest: config.maxIdsPerRequest },
  };
  const settings = resolveSettings(overrides);
  // Builds no SDK client: each is loaded on the first wake-up of its channel.
  const notifier = options.notifier ?? createWakeNotifier({ metrics, logger });

  const build = (apiKey: string | undefined, tokenSigningKey: Uint8Array | undefined): ConnectedEngine => {
    const client = createSearchClient(searchConnection(config.store, apiKey));
    const { service } = createLockService({
      client,
      index: config.lockIndex,
      settings: { ...overrides, notifier, ...(tokenSigningKey ? { tokenSigningKey } : {}) },
    });
    return { engine: service.engine, requests: service.requests, service, client };
  };

  // Only Elasticsearch takes an API key; OpenSearch signs with the role's credentials (SigV4) or goes without.
  const es = config.store.product === 'elasticsearch' ? config.store : undefined;
  // Without secrets to fetch, the client exists as soon as the module has loaded (during the init phase).
  const needsSecrets = Boolean(es?.apiKeyParameter || config.tokenSigningKeyParameter);
  let built: Promise<ConnectedEngine> | undefined = needsSecrets ? undefined : Promise.resolve(build(es?.apiKey, config.tokenSigningKey));

  const connect = (): Promise<ConnectedEngine> => {
    built ??= (async () => {
      const [apiKey, signingKey] = await Promise.all([
        es?.apiKeyParameter ? fetchSecret(es.apiKeyParameter).then((raw) => pickSecret(raw, ['apiKey', 'api_key', 'encoded'])) : es?.apiKey,
        config.tokenSigningKeyParameter
          ? fetchSecret(config.tokenSigningKeyParameter).then((raw) => {
              const decoded = decodeSigningKey(pickSecret(raw, ['signingKey', 'key']));
              if (typeof decoded === 'string') throw new ConfigError([`${config.tokenSigningKeyParameter}: ${decoded}`]);
              return decoded;
            })
          : config.tokenSigningKey,
      ]);
      return build(apiKey, signingKey);
    })().catch((error: unknown) => {
      built = undefined;
      throw error;
    });
    return built;
  };

  let indexed: Promise<ConnectedEngine> | undefined;
  const engine = (): Promise<ConnectedEngine> => {
    indexed ??= connect()
      .then(async (ready) => {
        if (config.ensureIndex) {
          const outcome = await ensureLockIndex(ready.client, config.lockIndex, { sharedSettings: sharedSettingsOf(overrides) }).catch((error: unknown) => {
            throw translateError(error, 'ensure lock index');
          });
          logger.info('lock index ready', { index: config.lockIndex, outcome });
        }
        return ready;
      })
      .catch((error: unknown) => {
        indexed = undefined;
        throw error;
      });
    return indexed;
  };

  const authorization = createAuthorization(config, { readSecret: fetchSecret });
  // A policy kept in SSM is read during the init phase; one that cannot be read or does not parse is
  // logged now and refuses every call that needs it (fail closed).
  if (config.policyParameter) {
    authorization.policy().catch((error: unknown) => logger.error('namespace policy unusable: calls that need it are refused', { cause: error as Error }));
  }
  const quota = createQuotaCheck(config.quota, async (query) => countLiveLocks((await engine()).client, config.lockIndex, query));
  const admit = createAdmission({ authorize: authorization, quota, logger });

  return {
    config,
    settings,
    requests: lockRequests(settings),
    logger,
    metrics,
    tracer,
    engine,
    client: async () => (await connect()).client,
    admit,
    notifier,
  };
}

let shared: Runtime | undefined;

/** The container's runtime, created on first use (at module load of a handler). */
export function runtime(): Runtime {
  shared ??= createRuntime();
  return shared;
}
