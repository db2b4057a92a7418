/** Which Elasticsearch the project runs and where its files live (install shared per version, one folder per node). */
import { join } from 'node:path';
import { numberFlag } from '../lib/cli.js';
import { userCacheDir } from '../lib/user-cache.js';

/** Newest 9.x on Maven Central that is not 9.5.0-9.5.2 (bulk writes could skip replicas). Keep in step with the client in package.json. */
export const ES_VERSION = '9.4.3';

export interface LocalNode {
  version: string;
  port: number;
  url: string;
  installDir: string;
  nodeDir: string;
  logFile: string;
  pidFile: string;
}

export class LocalEsError extends Error {
  override name = 'LocalEsError';
}

/** ES_LOCKS_CACHE, else the user cache. */
export function cacheDir(): string {
  return process.env.ES_LOCKS_CACHE ?? userCacheDir();
}

/** A port from the environment: a UsageError naming the variable when it is not one. */
export const portFromEnv = (name: string, fallback: number, max = 65535): number =>
  numberFlag(name, process.env[name], { integer: true, min: 1, max }, fallback);

export function localNode(port = portFromEnv('ES_LOCAL_PORT', 9200)): LocalNode {
  const root = cacheDir();
  const nodeDir = join(root, 'nodes', `${ES_VERSION}-${port}`);
  return {
    version: ES_VERSION,
    port,
    url: `http://127.0.0.1:${port}`,
    installDir: join(root, `elasticsearch-${ES_VERSION}`),
    nodeDir,
    logFile: join(nodeDir, 'logs', 'es-lease-locks.log'),
    pidFile: join(nodeDir, 'es.pid'),
  };
}
