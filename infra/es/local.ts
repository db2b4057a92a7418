/**
 * The project's own Elasticsearch: Elastic's minimal test distribution from Maven Central,
 * cached per user outside the clone, run on loopback by a non-root user.
 *
 * Only used when ES_URL is not set; users with a cluster of their own never reach this file.
 */

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive, pidProcess, stopProcess } from '../lib/stop-process.js';
import { ensureInstalled } from './install.js';
import { findJavaHome } from './java.js';
import { ES_VERSION, LocalEsError, type LocalNode, localNode } from './node.js';
import { writeNodeConfig } from './node-config.js';
import { isRunning, portAnswers, waitForCluster } from './probe.js';
import { commandAs, serviceUserFor } from './service-user.js';

/** Starts the local node unless it already runs; returns whether this call started it. */
export async function startLocal(options: { port?: number; log?: (line: string) => void; heap?: string } = {}): Promise<{ node: LocalNode; started: boolean }> {
  const log = options.log ?? ((line: string) => console.error(`[es] ${line}`));
  const node = localNode(options.port);
  if (await isRunning(node)) return { node, started: false };
  if (await portAnswers(node.port)) {
    throw new LocalEsError(
      `Port ${node.port} is taken by something that is not this project's Elasticsearch. ` +
        'Stop it, choose another port with ES_LOCAL_PORT, or point ES_URL at it if it is an Elasticsearch you want to use.',
    );
  }
  const javaHome = findJavaHome();
  ensureInstalled(node, log);
  const configDir = writeNodeConfig(node);
  const serviceUser = serviceUserFor(node);
  rmSync(node.pidFile, { force: true });
  const heap = options.heap ?? '512m';
  const env = {
    ...process.env,
    ES_JAVA_HOME: javaHome,
    ES_PATH_CONF: configDir,
    ES_TMPDIR: join(node.nodeDir, 'tmp'),
    ES_JAVA_OPTS: `-Xms${heap} -Xmx${heap}`,
  };
  log(`starting Elasticsearch ${ES_VERSION} on ${node.url} (java ${javaHome}${serviceUser ? `, user ${serviceUser}` : ''})`);
  const argv = commandAs(serviceUser, env, [join(node.installDir, 'bin', 'elasticsearch'), '-d', '-p', node.pidFile]);
  const result = spawnSync(argv[0]!, argv.slice(1), { cwd: join(node.nodeDir, 'logs'), env, encoding: 'utf8' });
  if (result.status !== 0) {
    throw new LocalEsError(`Elasticsearch failed to start (exit ${result.status}).\n${result.stderr}${result.stdout}\nLogs: ${node.logFile}`);
  }
  await waitForCluster(node.url, 120_000, node.logFile);
  log(`ready on ${node.url}; logs in ${node.logFile}`);
  return { node, started: true };
}

/** The pid of the node, when its pid file names a live process. */
function runningPid(node: LocalNode): number | undefined {
  if (!existsSync(node.pidFile)) return undefined;
  const pid = Number(readFileSync(node.pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && pidAlive(pid) ? pid : undefined;
}

/** Stops the node this project started (by its pid file); false when none was running. */
export async function stopLocal(options: { port?: number } = {}): Promise<boolean> {
  const pid = runningPid(localNode(options.port));
  if (!pid) return false;
  await stopProcess(pidProcess(pid), { graceMs: 30_000 });
  return true;
}
