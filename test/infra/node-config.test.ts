/**
 * The settings the project writes for its own nodes, without starting one: OpenSearch gets its own
 * setting names, ports, cluster names and folders; Elasticsearch gets exactly what it got before
 * OpenSearch was added; and the two products never share a port, a cluster or a folder.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ClusterNode, clusterNodes } from '../../infra/es/cluster.js';
import { DISTRIBUTIONS, distributionNamed, ELASTICSEARCH, OPENSEARCH } from '../../infra/es/distribution.js';
import { localNode } from '../../infra/es/node.js';
import { type ClusterMembership, nodeJvmOptions, nodeSettings, writeNodeConfig } from '../../infra/es/node-config.js';
import { serverUrlFromEnv } from '../../infra/es/target.js';
import { UsageError } from '../../tools/cli/flags.js';

const cache = mkdtempSync(join(tmpdir(), 'node-config-'));
const VARIABLES = ['ES_LOCKS_CACHE', 'ES_LOCAL_PORT', 'ES_CLUSTER_PORT', 'OPENSEARCH_LOCAL_PORT', 'OPENSEARCH_CLUSTER_PORT', 'OPENSEARCH_URL'];
const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));

beforeAll(() => {
  for (const name of VARIABLES) delete process.env[name];
  process.env.ES_LOCKS_CACHE = cache;
});
afterEach(() => {
  for (const name of VARIABLES.slice(1)) delete process.env[name];
});
afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  rmSync(cache, { recursive: true, force: true });
});

/** What cluster.ts gives a node of a three-node cluster (without the fault detection lines). */
const membership = (node: ClusterNode, all: ClusterNode[]): ClusterMembership => ({
  nodeName: node.name,
  transportPort: node.transportPort,
  seedHosts: all.map((member) => `127.0.0.1:${member.transportPort}`),
  initialManagerNodes: all.map((member) => member.name),
  extra: [`${node.distribution.settingNames.noManagerBlock}: all`],
});

describe('the OpenSearch single node', () => {
  it('listens on 127.0.0.1:9250 in a cluster and folder of its own, with no Elasticsearch-only setting', () => {
    const node = localNode(undefined, OPENSEARCH);
    expect(node.url).toBe('http://127.0.0.1:9250');
    expect(node.nodeDir).toBe(join(cache, 'nodes', 'opensearch-3.8.0-9250'));
    expect(node.installDir).toBe(join(cache, 'opensearch-3.8.0'));
    expect(node.logFile).toBe(join(node.nodeDir, 'logs', 'es-lease-locks-opensearch.log'));
    expect(node.pidFile).toBe(join(node.nodeDir, 'opensearch.pid'));
    expect(nodeSettings(node)).toEqual([
      'cluster.name: es-lease-locks-opensearch',
      'node.name: local-9250',
      'discovery.type: single-node',
      'transport.port: 0',
      'network.host: 127.0.0.1',
      'http.port: 9250',
      `path.data: ${join(node.nodeDir, 'data')}`,
      `path.logs: ${join(node.nodeDir, 'logs')}`,
      'cluster.routing.allocation.disk.threshold_enabled: false',
      '',
    ]);
  });

  it('moves with OPENSEARCH_LOCAL_PORT', () => {
    process.env.OPENSEARCH_LOCAL_PORT = '9277';
    expect(localNode(undefined, OPENSEARCH).url).toBe('http://127.0.0.1:9277');
    expect(localNode().port).toBe(9200);
  });
});

describe('the OpenSearch fault cluster', () => {
  it('has three nodes on 9351-9353, transport 100 above, named with the cluster-manager settings (not the deprecated master ones)', () => {
    const nodes = clusterNodes(3, undefined, OPENSEARCH);
    expect(nodes.map((node) => [node.name, node.port, node.transportPort])).toEqual([
      ['fault-1', 9351, 9451],
      ['fault-2', 9352, 9452],
      ['fault-3', 9353, 9453],
    ]);
    const settings = nodeSettings(nodes[1]!, membership(nodes[1]!, nodes));
    expect(settings).toContain('cluster.name: es-lease-locks-opensearch-faults');
    expect(settings).toContain('node.name: fault-2');
    expect(settings).toContain('discovery.seed_hosts: ["127.0.0.1:9451", "127.0.0.1:9452", "127.0.0.1:9453"]');
    expect(settings).toContain('cluster.initial_cluster_manager_nodes: ["fault-1", "fault-2", "fault-3"]');
    expect(settings).toContain('cluster.no_cluster_manager_block: all');
    expect(settings).toContain('transport.port: 9452');
    expect(settings).toContain('http.port: 9352');
    expect(settings.join('\n')).not.toMatch(/master|xpack|single-node/);
    expect(nodes[0]!.logFile).toBe(join(cache, 'nodes', 'opensearch-3.8.0-9351', 'logs', 'es-lease-locks-opensearch-faults.log'));
  });

  it('moves with OPENSEARCH_CLUSTER_PORT', () => {
    process.env.OPENSEARCH_CLUSTER_PORT = '9500';
    expect(clusterNodes(2, undefined, OPENSEARCH).map((node) => node.port)).toEqual([9500, 9501]);
    expect(clusterNodes(1)[0]!.port).toBe(9301);
  });
});

describe('Elasticsearch, as before', () => {
  it('single node: the same elasticsearch.yml lines', () => {
    const node = localNode();
    expect(node.nodeDir).toBe(join(cache, 'nodes', '9.4.3-9200'));
    expect(node.pidFile).toBe(join(node.nodeDir, 'es.pid'));
    expect(nodeSettings(node)).toEqual([
      'cluster.name: es-lease-locks',
      'node.name: local-9200',
      'discovery.type: single-node',
      'transport.port: 0',
      'network.host: 127.0.0.1',
      'http.port: 9200',
      `path.data: ${join(node.nodeDir, 'data')}`,
      `path.logs: ${join(node.nodeDir, 'logs')}`,
      'xpack.security.enabled: false',
      'cluster.routing.allocation.disk.threshold_enabled: false',
      '',
    ]);
  });

  it('cluster node: the master settings, the faults cluster name, and its log named after it', () => {
    const nodes = clusterNodes(3);
    const settings = nodeSettings(nodes[0]!, membership(nodes[0]!, nodes));
    expect(settings.slice(0, 6)).toEqual([
      'cluster.name: es-lease-locks-faults',
      'node.name: fault-1',
      'discovery.seed_hosts: ["127.0.0.1:9401", "127.0.0.1:9402", "127.0.0.1:9403"]',
      'cluster.initial_master_nodes: ["fault-1", "fault-2", "fault-3"]',
      'transport.port: 9401',
      'cluster.no_master_block: all',
    ]);
    expect(settings).toContain('xpack.security.enabled: false');
    expect(nodes[0]!.logFile).toBe(join(cache, 'nodes', '9.4.3-9301', 'logs', 'es-lease-locks-faults.log'));
  });
});

describe('both products at once', () => {
  it('share no HTTP or transport port, cluster name, node folder or install', () => {
    const singles = DISTRIBUTIONS.map((distribution) => localNode(undefined, distribution));
    const members = DISTRIBUTIONS.flatMap((distribution) => clusterNodes(9, undefined, distribution));
    const all = [...singles, ...members];
    const ports = [...all.map((node) => node.port), ...members.map((node) => node.transportPort)];
    expect(new Set(ports).size).toBe(ports.length);
    expect(new Set(all.map((node) => node.nodeDir)).size).toBe(all.length);
    const clusterNames = DISTRIBUTIONS.flatMap((distribution) => [distribution.single.clusterName, distribution.cluster.clusterName]);
    expect(new Set(clusterNames).size).toBe(4);
    expect(ELASTICSEARCH.installDirName).not.toBe(OPENSEARCH.installDirName);
  });

  it('give OpenSearch its own start variables and a 512m single-node heap', () => {
    expect(OPENSEARCH.env).toEqual({
      javaHome: 'OPENSEARCH_JAVA_HOME',
      pathConf: 'OPENSEARCH_PATH_CONF',
      javaOpts: 'OPENSEARCH_JAVA_OPTS',
      tmpDir: 'OPENSEARCH_TMPDIR',
    });
    expect(OPENSEARCH.single.heap).toBe('512m');
    expect(OPENSEARCH.artifact).toBe('org.opensearch.distribution.integ-test-zip:opensearch:3.8.0:zip');
  });
});

describe("the distribution's jvm.options", () => {
  it("OpenSearch's relative log and heap-dump paths move into the node folder (the script runs from the shared install)", () => {
    const node = localNode(undefined, OPENSEARCH);
    const shipped = [
      '-XX:HeapDumpPath=data',
      '-XX:ErrorFile=logs/hs_err_pid%p.log',
      '9-:-Xlog:gc*,gc+age=trace,safepoint:file=logs/gc.log:utctime,pid,tags:filecount=32,filesize=64m',
      '21-:-javaagent:agent/opensearch-agent.jar',
    ].join('\n');
    expect(nodeJvmOptions(shipped, node).split('\n')).toEqual([
      `-XX:HeapDumpPath=${node.nodeDir}/data`,
      `-XX:ErrorFile=${node.nodeDir}/logs/hs_err_pid%p.log`,
      `9-:-Xlog:gc*,gc+age=trace,safepoint:file=${node.nodeDir}/logs/gc.log:utctime,pid,tags:filecount=32,filesize=64m`,
      '21-:-javaagent:agent/opensearch-agent.jar',
    ]);
  });

  it("Elasticsearch's comes out unchanged", () => {
    const shipped = [
      '-XX:+HeapDumpOnOutOfMemoryError',
      '-XX:ErrorFile=hs_err_pid%p.log',
      '-Xlog:gc*,gc+age=trace,safepoint:file=gc.log:utctime,level,pid,tags:filecount=32,filesize=64m',
      '-Djava.io.tmpdir=${ES_TMPDIR}',
    ].join('\n');
    expect(nodeJvmOptions(shipped, localNode())).toBe(shipped);
  });
});

describe('writeNodeConfig', () => {
  it("writes opensearch.yml over the shipped one, keeps the distribution's other files, and makes the node's folders", () => {
    const node = localNode(undefined, OPENSEARCH);
    const shipped = join(node.installDir, 'config');
    mkdirSync(join(shipped, 'jvm.options.d'), { recursive: true });
    writeFileSync(join(shipped, 'opensearch.yml'), '# the shipped example\n');
    writeFileSync(join(shipped, 'jvm.options'), '-Xms1g\n-XX:HeapDumpPath=data\n');
    writeFileSync(join(shipped, 'log4j2.properties'), 'status = error\n');

    const configDir = writeNodeConfig(node);

    expect(configDir).toBe(join(node.nodeDir, 'config'));
    expect(readdirSync(configDir).sort()).toEqual(['jvm.options', 'jvm.options.d', 'log4j2.properties', 'opensearch.yml']);
    expect(readFileSync(join(configDir, 'opensearch.yml'), 'utf8')).toBe(nodeSettings(node).join('\n'));
    expect(readFileSync(join(configDir, 'jvm.options'), 'utf8')).toBe(`-Xms1g\n-XX:HeapDumpPath=${node.nodeDir}/data\n`);
    expect(readFileSync(join(configDir, 'log4j2.properties'), 'utf8')).toBe('status = error\n');
    expect(readdirSync(node.nodeDir).sort()).toEqual(['config', 'data', 'logs', 'tmp']);
  });
});

describe('choosing and reaching a product', () => {
  it('--product names one of the two; anything else is a usage mistake', () => {
    expect(distributionNamed(undefined)).toBe(ELASTICSEARCH);
    expect(distributionNamed('opensearch')).toBe(OPENSEARCH);
    expect(() => distributionNamed('solr')).toThrow(UsageError);
    expect(() => distributionNamed('solr')).toThrow('--product: must be elasticsearch or opensearch (got "solr")');
  });

  it('OPENSEARCH_URL is checked like ES_URL', () => {
    expect(serverUrlFromEnv(OPENSEARCH)).toBeUndefined();
    process.env.OPENSEARCH_URL = 'https://search.example.com:443,http://127.0.0.1:9250';
    expect(serverUrlFromEnv(OPENSEARCH)).toBe(process.env.OPENSEARCH_URL);
    process.env.OPENSEARCH_URL = 'ftp://x';
    expect(() => serverUrlFromEnv(OPENSEARCH)).toThrow(/^OPENSEARCH_URL: must be an http\(s\) URL such as http:\/\/127\.0\.0\.1:9250/);
  });
});
