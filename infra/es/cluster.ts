/**
 * A local multi-node cluster for fault injection, from the same cached distribution as the single
 * node: loopback only, its own ports (HTTP from ES_CLUSTER_PORT, default 9301; transport 100 above),
 * small heaps, shortened fault detection (a node that stops answering is removed within seconds, as
 * the README recommends for the lock index's cluster). Each node can be killed, paused (SIGSTOP),
 * resumed and restarted by the fault runner.
 */

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { httpGet } from '../lib/http-probe.js';
import { pidAlive, pidProcess, stopProcess } from '../lib/stop-process.js';
import { waitUntil } from '../lib/wait.js';
import { ensureInstalled } from './install.js';
import { findJavaHome } from './java.js';
import { ES_VERSION, LocalEsError, type LocalNode, localNode, portFromEnv } from './node.js';
import { type ClusterMembership, writeNodeConfig } from './node-config.js';
import { portAnswers } from './probe.js';
import { commandAs, serviceUserFor } from './service-user.js';

export const CLUSTER_NAME = 'es-lease-locks-faults';

export interface ClusterNode extends LocalNode {
  name: string;
  transportPort: number;
}

// Transport ports are 100 above, for up to 9 nodes.
export function clusterNodes(count: number, basePort = portFromEnv('ES_CLUSTER_PORT', 9301, 65535 - 109)): ClusterNode[] {
  return Array.from({ length: count }, (_, index) => {
    const port = basePort + index;
    return { ...localNode(port), name: `fault-${index + 1}`, transportPort: port + 100 };
  });
}

/** What the harness can do to a node, by its pid file. */
export function nodePid(node: ClusterNode): number | undefined {
  if (!existsSync(node.pidFile)) return undefined;
  const pid = Number(readFileSync(node.pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && pidAlive(pid) ? pid : undefined;
}

export function signalNode(node: ClusterNode, signal: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT'): void {
  const pid = nodePid(node);
  if (!pid) throw new LocalEsError(`${node.name} is not running`);
  process.kill(pid, signal);
}

export async function startNode(node: ClusterNode, all: ClusterNode[], log: (line: string) => void): Promise<void> {
  if (nodePid(node)) return;
  if (await portAnswers(node.port)) throw new LocalEsError(`Port ${node.port} is taken; choose another base port with ES_CLUSTER_PORT`);
  const javaHome = findJavaHome();
  ensureInstalled(node, log);
  const membership: ClusterMembership = {
    clusterName: CLUSTER_NAME,
    nodeName: node.name,
    transportPort: node.transportPort,
    seedHosts: all.map((member) => `127.0.0.1:${member.transportPort}`),
    initialMasterNodes: all.map((member) => member.name),
    extra: [
      'cluster.fault_detection.follower_check.interval: 1s',
      'cluster.fault_detection.follower_check.timeout: 3s',
      'cluster.fault_detection.follower_check.retry_count: 2',
      'cluster.fault_detection.leader_check.interval: 1s',
      'cluster.fault_detection.leader_check.timeout: 3s',
      'cluster.fault_detection.leader_check.retry_count: 2',
      'cluster.no_master_block: all',
    ],
  };
  const configDir = writeNodeConfig(node, membership);
  const serviceUser = serviceUserFor(node);
  rmSync(node.pidFile, { force: true });
  const env = { ...process.env, ES_JAVA_HOME: javaHome, ES_PATH_CONF: configDir, ES_TMPDIR: join(node.nodeDir, 'tmp'), ES_JAVA_OPTS: '-Xms256m -Xmx256m' };
  log(`starting ${node.name} (Elasticsearch ${ES_VERSION}) on ${node.url}`);
  const argv = commandAs(serviceUser, env, [join(node.installDir, 'bin', 'elasticsearch'), '-d', '-p', node.pidFile]);
  const result = spawnSync(argv[0]!, argv.slice(1), { cwd: join(node.nodeDir, 'logs'), env, encoding: 'utf8' });
  if (result.status !== 0)
    throw new LocalEsError(`${node.name} failed to start (exit ${result.status}).\n${result.stderr}${result.stdout}\nLogs: ${node.logFile}`);
}

/** Waits until the cluster has `count` nodes and is at least yellow, asking any node that answers. */
export async function waitForNodes(nodes: ClusterNode[], count: number, timeoutMs: number): Promise<void> {
  const outcome = await waitUntil(
    async () => {
      for (const node of nodes) {
        const answer = await httpGet(`${node.url}/_cluster/health?wait_for_nodes=${count}&wait_for_status=yellow&timeout=2s`, 4000);
        if (answer.status === 200) return true;
      }
      return `fewer than ${count} nodes in the cluster`;
    },
    { timeoutMs, intervalMs: 1000 },
  );
  if (!outcome.ready)
    throw new LocalEsError(
      `The cluster did not reach ${count} nodes in ${timeoutMs / 1000} s (${outcome.reason}); logs: ${nodes.map((node) => node.logFile).join(', ')}`,
    );
}

export async function startCluster(count: number, log: (line: string) => void = (line) => console.error(`[cluster] ${line}`)): Promise<ClusterNode[]> {
  const nodes = clusterNodes(count);
  for (const node of nodes) await startNode(node, nodes, log);
  await waitForNodes(nodes, count, 240_000);
  log(`${count} nodes up: ${nodes.map((node) => node.url).join(', ')}`);
  return nodes;
}

export async function stopCluster(count: number): Promise<number> {
  let stopped = 0;
  for (const node of clusterNodes(count)) {
    const pid = nodePid(node);
    if (!pid) continue;
    // A paused node cannot stop: wake it first.
    process.kill(pid, 'SIGCONT');
    await stopProcess(pidProcess(pid), { graceMs: 20_000 });
    stopped++;
  }
  return stopped;
}
