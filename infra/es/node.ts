/** Which server the project runs and where its files live (install shared per version, one folder per node). */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { numberFlag } from '../../tools/cli/flags.js';
import { pidAlive } from '../lib/stop-process.js';
import { userCacheDir } from '../lib/user-cache.js';
import { type Distribution, ELASTICSEARCH } from './distribution.js';

export const ES_VERSION = ELASTICSEARCH.version;

export interface LocalNode {
  distribution: Distribution;
  version: string;
  port: number;
  url: string;
  /** What its /_cluster/health names: tells this project's node from anything else on the port. */
  clusterName: string;
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

/** A node of `distribution` listening on `port`, member of `clusterName`. */
export function nodeOf(distribution: Distribution, port: number, clusterName: string): LocalNode {
  const root = cacheDir();
  const nodeDir = join(root, 'nodes', `${distribution.nodeDirPrefix}${distribution.version}-${port}`);
  return {
    distribution,
    version: distribution.version,
    port,
    url: `http://127.0.0.1:${port}`,
    clusterName,
    installDir: join(root, distribution.installDirName),
    nodeDir,
    // log4j2.properties of both products name the main log after the cluster.
    logFile: join(nodeDir, 'logs', `${clusterName}.log`),
    pidFile: join(nodeDir, distribution.pidFileName),
  };
}

/** The project's single node of `distribution` (on ES_LOCAL_PORT / OPENSEARCH_LOCAL_PORT unless `port` is given). */
export function localNode(port?: number, distribution: Distribution = ELASTICSEARCH): LocalNode {
  const { single } = distribution;
  return nodeOf(distribution, port ?? portFromEnv(single.portEnv, single.port), single.clusterName);
}

/** The node's pid, when its pid file names a live process. */
export function nodePid(node: LocalNode): number | undefined {
  if (!existsSync(node.pidFile)) return undefined;
  const pid = Number(readFileSync(node.pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && pidAlive(pid) ? pid : undefined;
}
