/**
 * The lock functions as a test file loads them: environment first (each file gets its own lock
 * index), then the handler modules, exactly as Lambda would import them.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, inject } from 'vitest';
import { deleteLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { testClient } from './engine.js';

export interface FunctionEnvOptions {
  label: string;
  env?: Record<string, string>;
}

/** The environment that points the functions at `url`, on the product this test project runs against. */
export const storeUrlEnv = (url: string): Record<string, string> =>
  inject('searchProduct') === 'opensearch' ? { OPENSEARCH_URL: url } : { ES_URL: url, ES_API_KEY: '' };

/** Sets the functions' environment for this test file and returns the lock index name. */
export function setFunctionEnv({ label, env = {} }: FunctionEnvOptions): string {
  const index = `locks-test-${label}-${randomBytes(4).toString('hex')}`;
  Object.assign(process.env, {
    ...(inject('searchProduct') === 'opensearch'
      ? { LOCK_STORE: 'opensearch', OPENSEARCH_URL: inject('esUrl'), OPENSEARCH_AUTH: 'none' }
      : { ES_URL: inject('esUrl'), ES_API_KEY: inject('esApiKey') }),
    LOCK_INDEX: index,
    MAX_CLOCK_SKEW_MS: '50',
    // Each test file gets a fresh lock index, created by the functions' opt-in at first use.
    LOCK_ENSURE_INDEX: 'true',
    // No authorization, as on the local stack (test/functions/authorization.test.ts sets a policy).
    LOCK_POLICY: 'allow-all',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_TRACE_ENABLED: 'false',
    ...env,
  });
  return process.env.LOCK_INDEX!;
}

export async function loadHandlers() {
  const [acquire, renew, release, inspect, list, health, sweeper, revoke, drain, status] = await Promise.all([
    import('../../functions/handlers/acquire.js'),
    import('../../functions/handlers/renew.js'),
    import('../../functions/handlers/release.js'),
    import('../../functions/handlers/inspect.js'),
    import('../../functions/handlers/list.js'),
    import('../../functions/handlers/health.js'),
    import('../../functions/handlers/sweeper.js'),
    import('../../functions/handlers/revoke.js'),
    import('../../functions/handlers/drain.js'),
    import('../../functions/handlers/status.js'),
  ]);
  return {
    acquire: acquire.handler,
    renew: renew.handler,
    release: release.handler,
    inspect: inspect.handler,
    list: list.handler,
    health: health.handler,
    sweeper: sweeper.handler,
    revoke: revoke.handler,
    drain: drain.handler,
    status: status.handler,
  };
}

export type Handlers = Awaited<ReturnType<typeof loadHandlers>>;

/**
 * The functions as one test file sees them (call it with top-level await): its own lock index, the
 * handler modules loaded after that environment, a client, and the index dropped after the file.
 */
export async function functionsUnderTest(options: FunctionEnvOptions): Promise<{ index: string; handlers: Handlers; client: SearchClient }> {
  const index = setFunctionEnv(options);
  const handlers = await loadHandlers();
  const client = testClient();
  afterAll(async () => {
    await deleteLockIndex(client, index);
    await client.close();
  });
  return { index, handlers, client };
}
