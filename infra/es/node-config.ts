/** The node's own config folder: the distribution's files plus an elasticsearch.yml for a loopback test node. */
import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalNode } from './node.js';

/** A node of the project's multi-node cluster (infra/es/cluster.ts) instead of a single node. */
export interface ClusterMembership {
  clusterName: string;
  nodeName: string;
  transportPort: number;
  seedHosts: string[];
  initialMasterNodes: string[];
  /** Extra elasticsearch.yml lines (fault detection timings). */
  extra: string[];
}

/** Returns the config folder (ES_PATH_CONF). */
export function writeNodeConfig(node: LocalNode, cluster?: ClusterMembership): string {
  const configDir = join(node.nodeDir, 'config');
  for (const dir of [configDir, join(node.nodeDir, 'data'), join(node.nodeDir, 'logs'), join(node.nodeDir, 'tmp')]) mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(join(node.installDir, 'config'))) {
    if (file !== 'elasticsearch.yml') cpSync(join(node.installDir, 'config', file), join(configDir, file), { recursive: true });
  }
  writeFileSync(
    join(configDir, 'elasticsearch.yml'),
    [
      ...(cluster
        ? [
            `cluster.name: ${cluster.clusterName}`,
            `node.name: ${cluster.nodeName}`,
            `discovery.seed_hosts: [${cluster.seedHosts.map((host) => `"${host}"`).join(', ')}]`,
            `cluster.initial_master_nodes: [${cluster.initialMasterNodes.map((name) => `"${name}"`).join(', ')}]`,
            `transport.port: ${cluster.transportPort}`,
            ...cluster.extra,
          ]
        : ['cluster.name: es-lease-locks', `node.name: local-${node.port}`, 'discovery.type: single-node', 'transport.port: 0']),
      'network.host: 127.0.0.1',
      `http.port: ${node.port}`,
      `path.data: ${join(node.nodeDir, 'data')}`,
      `path.logs: ${join(node.nodeDir, 'logs')}`,
      // Loopback only, test node: the distribution ships the security module, which would demand TLS and passwords.
      'xpack.security.enabled: false',
      // Small CI disks must not flip the lock index to read-only.
      'cluster.routing.allocation.disk.threshold_enabled: false',
      '',
    ].join('\n'),
  );
  return configDir;
}
