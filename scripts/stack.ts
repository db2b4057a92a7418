/**
 * The whole service on this machine: the lock store (Elasticsearch or OpenSearch: ES_URL,
 * OPENSEARCH_URL, or the project's own node), the lock index, and the functions behind
 * serverless-offline (HTTP API on `port`, the Lambda invoke API on `lambdaPort`). Used by `npm run
 * dev`, the end-to-end tests and the load-test kit.
 *
 *   const stack = await startStack({ port: 3000 });
 *   await fetch(`${stack.baseUrl}/health`);
 *   await stack.stop();
 */

import type { SearchProduct } from '../functions/store/search-client.js';
import { portAnswers } from '../infra/es/probe.js';
import { answers200 } from '../infra/lib/http-probe.js';
import { resolveStore, type StoreEndpoint, storeLogTag } from '../infra/lib/store-target.js';
import { waitUntil } from '../infra/lib/wait.js';
import { functionEnv } from './stack/function-env.js';
import { prepareLockIndex } from './stack/lock-index.js';
import { startOffline } from './stack/offline.js';

export { ROOT } from './lib/root.js';

export interface StackOptions {
  /** The server of the lock index (default elasticsearch). */
  store?: SearchProduct;
  /** HTTP API port (default 3000). */
  port?: number;
  /** Lambda invoke API port (default 3002). */
  lambdaPort?: number;
  /** Receives every line serverless-offline prints (function logs included). Default: kept quiet. */
  log?: (line: string) => void;
  /**
   * Extra environment for the functions (LOCK_INDEX, POWERTOOLS_LOG_LEVEL, LOCK_TOKEN_SIGNING_KEY, ...).
   * The store's URL variable here (ES_URL with ES_API_KEY, OPENSEARCH_URL) names its server.
   */
  env?: Record<string, string>;
  /** How long to wait for GET /health to answer 200 (default 180 s: the first run bundles the functions). */
  readyTimeoutMs?: number;
  /** Rebuild the bundles when source files change (for `npm run dev`; off by default so measurements never hit a rebuild). */
  watch?: boolean;
  /**
   * Run the handlers inside the serverless-offline process instead of one worker per concurrent
   * request. Load tests use it: starting a worker costs seconds of CPU on a 2-core machine, which
   * would measure the harness instead of the locks. The handlers keep no per-request module state.
   */
  inProcess?: boolean;
  /** How the caller's user sets each port, for the message when one is taken (default options.port / options.lambdaPort). */
  portNames?: { port: string; lambdaPort: string };
}

export interface Stack {
  baseUrl: string;
  /** The server that holds the lock index, as the functions reach it. */
  store: StoreEndpoint;
  stop(): Promise<void>;
}

export interface StackDetails extends Stack {
  /** The local Lambda invoke endpoint (AWS SDK `endpoint`, or POST /2015-03-31/functions/<name>/invocations). */
  lambdaUrl: string;
  /** Function names as the invoke endpoint knows them: `es-lease-locks-local-<function>`. */
  functionName(name: string): string;
  lockIndex: string;
}

export async function startStack(options: StackOptions = {}): Promise<StackDetails> {
  const port = options.port ?? 3000;
  const lambdaPort = options.lambdaPort ?? 3002;
  const log = options.log;
  const names = options.portNames ?? { port: 'options.port', lambdaPort: 'options.lambdaPort' };
  for (const [taken, name] of [
    [port, names.port],
    [lambdaPort, names.lambdaPort],
  ] as const) {
    if (await portAnswers(taken))
      throw new Error(`port ${taken} is already in use (something listens there): set ${name} to a free port, or stop that process`);
  }

  // The store's URL in options.env wins; otherwise its URL variable in the environment, else the project's own node.
  const product = options.store ?? 'elasticsearch';
  const store = await resolveStore(product, log ? (line) => log(`[${storeLogTag(product)}] ${line}`) : undefined, options.env);
  const env = functionEnv(store.functionEnv(), options.env);
  try {
    // On the project's own node a lock index left by an earlier version of this kit is replaced once idle.
    await prepareLockIndex(store, env.LOCK_INDEX!, { replaceIdleLegacyIndex: store.ownNode, env });
  } catch (error) {
    await store.stop();
    throw error;
  }

  const offline = startOffline({ port, lambdaPort, env, watch: options.watch, inProcess: options.inProcess, onLine: log });
  const stop = async (): Promise<void> => {
    await offline.stop();
    await store.stop();
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  const health = await waitUntil(() => answers200(`${baseUrl}/health`), {
    timeoutMs: options.readyTimeoutMs ?? 180_000,
    intervalMs: 250,
    abandonIf: offline.exitReason,
  });
  if (!health.ready) {
    await stop();
    throw new Error(
      health.abandoned
        ? `serverless offline exited (${health.reason}) before ${baseUrl}/health answered.\n${offline.tail()}`
        : `${baseUrl}/health did not answer 200 in time (last: ${health.reason}).\n${offline.tail()}`,
    );
  }

  return {
    baseUrl,
    store,
    lambdaUrl: `http://127.0.0.1:${lambdaPort}`,
    functionName: (name) => `es-lease-locks-local-${name}`,
    lockIndex: env.LOCK_INDEX!,
    stop,
  };
}
