/**
 * A local multi-node cluster for fault injection, from the same cached distribution as the single
 * node: loopback only, its own ports (HTTP from ES_CLUSTER_PORT, default 9301, or for OpenSearch
 * OPENSEARCH_CLUSTER_PORT, default 9351; transport 100 above), small heaps, shortened fault
 * detection (a node that stops answering is removed within seconds, as docs/model.md recommends for
 * the lock index's cluster). Each node can be killed, paused (SIGSTOP), resumed and restarted by
 * the fault runner.
 */

import { httpGet } from '../lib/http-probe.js';
import { pidProcess, stopProcess } from '../lib/stop-process.js';
import { waitUntil } from '../lib/wait.js';
import { type Distribution, ELASTICSEARCH } from './distribution.js';
import { ensureInstalled } from './install.js';
import { findJavaHome } from './java.js';
import { launchNode } from './launch.js';
import { LocalEsError, type LocalNode, nodeOf, nodePid, portFromEnv } from './node.js';
import { type ClusterMembership, writeNodeConfig } from './node-config.js';
import { portAnswers } from './probe.js';
import { serviceUserFor } from './service-user.js';

export { nodePid };

/** Elasticsearch's fault cluster (OpenSearch's: OPENSEARCH.cluster.clusterName). */
export const CLUSTER_NAME = ELASTICSEARCH.cluster.clusterName;

export interface ClusterNode extends LocalNode {
  name: string;
  transportPort: number;
}

const MAX_NODES = 9;
const TRANSPORT_OFFSET = 100;

/** The first `count` nodes of the distribution's fault cluster; transport ports are 100 above, for up to 9 nodes. */
export function clusterNodes(count: number, basePort?: number, distribution: Distribution = ELASTICSEARCH): ClusterNode[] {
  const { cluster } = distribution;
  const first = basePort ?? portFromEnv(cluster.portEnv, cluster.port, 65535 - TRANSPORT_OFFSET - MAX_NODES);
  return Array.from({ length: count }, (_, index) => {
    const port = first + index;
    return { ...nodeOf(distribution, port, cluster.clusterName), name: `fault-${index + 1}`, transportPort: port + TRANSPORT_OFFSET };
  });
}

/** What the harness can do to a node, by its pid file. */
export function signalNode(node: ClusterNode, signal: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT'): void {
  const pid = nodePid(node);
  if (!pid) throw new LocalEsError(`${node.name} is not running`);
  process.kill(pid, signal);
}

/** Fault detection in seconds rather than the defaults' half a minute or more. */
const FAST_FAULT_DETECTION = [
  'cluster.fault_detection.follower_check.interval: 1s',
  'cluster.fault_detection.follower_check.timeout: 3s',
  'cluster.fault_detection.follower_check.retry_count: 2',
  'cluster.fault_detection.leader_check.interval: 1s',
  'cluster.fault_detection.leader_check.timeout: 3s',
  'cluster.fault_detection.leader_check.retry_count: 2',
];

export async function startNode(node: ClusterNode, all: ClusterNode[], log: (line: string) => void): Promise<void> {
  if (nodePid(node)) return;
  const { distribution } = node;
  if (await portAnswers(node.port)) throw new LocalEsError(`Port ${node.port} is taken; choose another base port with ${distribution.cluster.portEnv}`);
  const javaHome = findJavaHome(distribution);
  ensureInstalled(node, log);
  const membership: ClusterMembership = {
    nodeName: node.name,
    transportPort: node.transportPort,
    seedHosts: all.map((member) => `127.0.0.1:${member.transportPort}`),
    initialManagerNodes: all.map((member) => member.name),
    extra: [...FAST_FAULT_DETECTION, `${distribution.settingNames.noManagerBlock}: all`],
  };
  const configDir = writeNodeConfig(node, membership);
  const serviceUser = serviceUserFor(node);
  log(`starting ${node.name} (${distribution.product} ${distribution.version}) on ${node.url}`);
  launchNode(node, { javaHome, configDir, heap: distribution.cluster.heap, serviceUser, label: node.name });
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

export async function startCluster(count: number, log?: (line: string) => void, distribution: Distribution = ELASTICSEARCH): Promise<ClusterNode[]> {
  const say = log ?? ((line: string) => console.error(`[${distribution.cluster.logTag}] ${line}`));
  const nodes = clusterNodes(count, undefined, distribution);
  for (const node of nodes) await startNode(node, nodes, say);
  await waitForNodes(nodes, count, 240_000);
  say(`${count} nodes up: ${nodes.map((node) => node.url).join(', ')}`);
  return nodes;
}

export async function stopCluster(count: number, distribution: Distribution = ELASTICSEARCH): Promise<number> {
  let stopped = 0;
  for (const node of clusterNodes(count, undefined, distribution)) {
    const pid = nodePid(node);
    if (!pid) continue;
    // A paused node cannot stop: wake it first.
    process.kill(pid, 'SIGCONT');
    await stopProcess(pidProcess(pid), { graceMs: 20_000 });
    stopped++;
  }
  return stopped;
}
