/**
 * The project's own Elasticsearch or OpenSearch: the product's minimal test distribution from Maven
 * Central, cached per user outside the clone, run on loopback by a non-root user.
 *
 * Only used when ES_URL (OPENSEARCH_URL) is not set; users with a cluster of their own never reach this file.
 */

import { pidProcess, stopProcess } from '../lib/stop-process.js';
import { type Distribution, ELASTICSEARCH } from './distribution.js';
import { ensureInstalled } from './install.js';
import { findJavaHome } from './java.js';
import { launchedServerGone, launchNode } from './launch.js';
import { LocalEsError, type LocalNode, localNode, nodePid } from './node.js';
import { writeNodeConfig } from './node-config.js';
import { isRunning, portAnswers, waitForCluster } from './probe.js';
import { serviceUserFor } from './service-user.js';
import { withStartLock } from './start-lock.js';

export interface LocalOptions {
  port?: number;
  log?: (line: string) => void;
  heap?: string;
  /** Elasticsearch unless given. */
  distribution?: Distribution;
}

/** Starts the local node unless it already runs; returns whether this call started it. */
export async function startLocal(options: LocalOptions = {}): Promise<{ node: LocalNode; started: boolean }> {
  const distribution = options.distribution ?? ELASTICSEARCH;
  const { product, version, single, urlEnv } = distribution;
  const log = options.log ?? ((line: string) => console.error(`[${single.logTag}] ${line}`));
  const node = localNode(options.port, distribution);
  if (await isRunning(node)) return { node, started: false };
  return withStartLock(node, async () => {
    // Whoever held the lock before us may have started it.
    if (await isRunning(node)) return { node, started: false };
    if (await portAnswers(node.port)) {
      throw new LocalEsError(
        `Port ${node.port} is taken by something that is not this project's ${product}. ` +
          `Stop it, choose another port with ${single.portEnv}, or point ${urlEnv} at it if it is an ${product} you want to use.`,
      );
    }
    const javaHome = findJavaHome(distribution);
    ensureInstalled(node, log);
    const configDir = writeNodeConfig(node);
    const serviceUser = serviceUserFor(node);
    log(`starting ${product} ${version} on ${node.url} (java ${javaHome}${serviceUser ? `, user ${serviceUser}` : ''})`);
    launchNode(node, { javaHome, configDir, heap: options.heap ?? single.heap, serviceUser, label: product });
    await waitForCluster(node.url, 120_000, node.logFile, { product, abandonIf: () => launchedServerGone(node) });
    log(`ready on ${node.url}; logs in ${node.logFile}`);
    return { node, started: true };
  });
}

/** Stops the node this project started (by its pid file); false when none was running. */
export async function stopLocal(options: { port?: number; distribution?: Distribution } = {}): Promise<boolean> {
  const pid = nodePid(localNode(options.port, options.distribution));
  if (!pid) return false;
  await stopProcess(pidProcess(pid), { graceMs: 30_000 });
  return true;
}
