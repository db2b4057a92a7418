/** The node's own config folder: the distribution's files plus a settings file (elasticsearch.yml, opensearch.yml) for a loopback test node. */
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalNode } from './node.js';

/** A node of the project's multi-node cluster (infra/es/cluster.ts) instead of a single node. */
export interface ClusterMembership {
  nodeName: string;
  transportPort: number;
  seedHosts: string[];
  /** The nodes that may elect the first cluster manager (master). */
  initialManagerNodes: string[];
  /** Extra settings lines (fault detection timings). */
  extra: string[];
}

/** The lines of the node's settings file. */
export function nodeSettings(node: LocalNode, cluster?: ClusterMembership): string[] {
  const { settingNames, productSettings } = node.distribution;
  const quoted = (items: string[]) => `[${items.map((item) => `"${item}"`).join(', ')}]`;
  return [
    `cluster.name: ${node.clusterName}`,
    ...(cluster
      ? [
          `node.name: ${cluster.nodeName}`,
          `discovery.seed_hosts: ${quoted(cluster.seedHosts)}`,
          `${settingNames.initialManagerNodes}: ${quoted(cluster.initialManagerNodes)}`,
          `transport.port: ${cluster.transportPort}`,
          ...cluster.extra,
        ]
      : [`node.name: local-${node.port}`, 'discovery.type: single-node', 'transport.port: 0']),
    'network.host: 127.0.0.1',
    `http.port: ${node.port}`,
    `path.data: ${join(node.nodeDir, 'data')}`,
    `path.logs: ${join(node.nodeDir, 'logs')}`,
    ...productSettings,
    // Small CI disks must not flip the lock index to read-only.
    'cluster.routing.allocation.disk.threshold_enabled: false',
    '',
  ];
}

/**
 * The distribution's jvm.options with its relative log and heap-dump paths moved into the node's
 * folder. OpenSearch's start script runs from the shared install (`cd $OPENSEARCH_HOME`), so
 * `file=logs/gc.log` would land there: unwritable for the service user, and shared by every node.
 * Elasticsearch's file has no such paths and comes out unchanged.
 */
export function nodeJvmOptions(text: string, node: LocalNode): string {
  return text.replace(
    /(HeapDumpPath=|ErrorFile=|file=|Xloggc:)(logs|data)(?=[/:\s]|$)/gm,
    (_, option: string, folder: string) => `${option}${join(node.nodeDir, folder)}`,
  );
}

/** Writes the config folder and the node's data, logs and tmp folders; returns the config folder (ES_PATH_CONF / OPENSEARCH_PATH_CONF). */
export function writeNodeConfig(node: LocalNode, cluster?: ClusterMembership): string {
  const { configFile } = node.distribution;
  const shipped = join(node.installDir, 'config');
  const configDir = join(node.nodeDir, 'config');
  for (const dir of [configDir, join(node.nodeDir, 'data'), join(node.nodeDir, 'logs'), join(node.nodeDir, 'tmp')]) mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(shipped)) {
    if (file === configFile) continue;
    if (file === 'jvm.options') writeFileSync(join(configDir, file), nodeJvmOptions(readFileSync(join(shipped, file), 'utf8'), node));
    else cpSync(join(shipped, file), join(configDir, file), { recursive: true });
  }
  writeFileSync(join(configDir, configFile), nodeSettings(node, cluster).join('\n'));
  return configDir;
}
