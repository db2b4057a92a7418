/**
 * The two search servers the project can run itself, as data: everything that differs between
 * Elasticsearch and OpenSearch for fetching, configuring, starting and finding a local node.
 * The code in this folder reads these fields and never asks which product it runs.
 */
import { UsageError } from '../../tools/cli/flags.js';

/** Where one kind of node listens and what its cluster is called (the single node, or the fault cluster's nodes). */
export interface NodeRole {
  /** The variable that moves the (first) HTTP port. */
  portEnv: string;
  port: number;
  clusterName: string;
  heap: string;
  /** The prefix of its start-up log lines ("[es] starting ..."). */
  logTag: string;
}

export interface Distribution {
  /** As messages name it. */
  product: 'Elasticsearch' | 'OpenSearch';
  /** The --product value of the CLIs. */
  name: 'elasticsearch' | 'opensearch';
  version: string;
  /** Maven Central coordinates of the minimal test distribution (group:artifact:version:packaging). */
  artifact: string;
  /** The zip's top folder, and the install folder in the cache (mvn names the zip after it too). */
  installDirName: string;
  /** The start script under bin/. */
  bin: string;
  minimumJava: number;
  /** What the start script reads from the environment. */
  env: { javaHome: string; pathConf: string; javaOpts: string; tmpDir: string };
  configFile: string;
  /** Settings the two products name differently (OpenSearch 3 deprecates the "master" names). */
  settingNames: { initialManagerNodes: string; noManagerBlock: string };
  /** Lines only this product understands; the other would refuse them as unknown settings. */
  productSettings: string[];
  /** The variable that names a server of the user's own instead of the local node. */
  urlEnv: string;
  /** Node folders are nodes/<prefix><version>-<port>. */
  nodeDirPrefix: string;
  pidFileName: string;
  single: NodeRole;
  cluster: NodeRole;
}

/** Newest 9.x on Maven Central that is not 9.5.0-9.5.2 (bulk writes could skip replicas). Keep in step with the client in package.json. */
const ES_VERSION = '9.4.3';

export const ELASTICSEARCH: Distribution = {
  product: 'Elasticsearch',
  name: 'elasticsearch',
  version: ES_VERSION,
  artifact: `org.elasticsearch.distribution.integ-test-zip:elasticsearch:${ES_VERSION}:zip`,
  installDirName: `elasticsearch-${ES_VERSION}`,
  bin: 'elasticsearch',
  minimumJava: 21,
  env: { javaHome: 'ES_JAVA_HOME', pathConf: 'ES_PATH_CONF', javaOpts: 'ES_JAVA_OPTS', tmpDir: 'ES_TMPDIR' },
  configFile: 'elasticsearch.yml',
  settingNames: { initialManagerNodes: 'cluster.initial_master_nodes', noManagerBlock: 'cluster.no_master_block' },
  // Loopback only, test node: the distribution ships the security module, which would demand TLS and passwords.
  productSettings: ['xpack.security.enabled: false'],
  urlEnv: 'ES_URL',
  nodeDirPrefix: '',
  pidFileName: 'es.pid',
  single: { portEnv: 'ES_LOCAL_PORT', port: 9200, clusterName: 'es-lease-locks', heap: '512m', logTag: 'es' },
  cluster: { portEnv: 'ES_CLUSTER_PORT', port: 9301, clusterName: 'es-lease-locks-faults', heap: '256m', logTag: 'cluster' },
};

/** The newest 3.x with an integ-test-zip on Maven Central (3.9.0 has none). */
const OPENSEARCH_VERSION = '3.8.0';

/** Ports sit between Elasticsearch's (9200; 9301-9309, transport 9401-9409) so both products run side by side. */
export const OPENSEARCH: Distribution = {
  product: 'OpenSearch',
  name: 'opensearch',
  version: OPENSEARCH_VERSION,
  artifact: `org.opensearch.distribution.integ-test-zip:opensearch:${OPENSEARCH_VERSION}:zip`,
  installDirName: `opensearch-${OPENSEARCH_VERSION}`,
  bin: 'opensearch',
  minimumJava: 21,
  env: { javaHome: 'OPENSEARCH_JAVA_HOME', pathConf: 'OPENSEARCH_PATH_CONF', javaOpts: 'OPENSEARCH_JAVA_OPTS', tmpDir: 'OPENSEARCH_TMPDIR' },
  configFile: 'opensearch.yml',
  settingNames: { initialManagerNodes: 'cluster.initial_cluster_manager_nodes', noManagerBlock: 'cluster.no_cluster_manager_block' },
  // The integ-test-zip has no security plugin: nothing to switch off.
  productSettings: [],
  urlEnv: 'OPENSEARCH_URL',
  nodeDirPrefix: 'opensearch-',
  pidFileName: 'opensearch.pid',
  single: { portEnv: 'OPENSEARCH_LOCAL_PORT', port: 9250, clusterName: 'es-lease-locks-opensearch', heap: '512m', logTag: 'opensearch' },
  // More heap than Elasticsearch's fault nodes: this zip also loads painless, reindex and ingest modules.
  cluster: { portEnv: 'OPENSEARCH_CLUSTER_PORT', port: 9351, clusterName: 'es-lease-locks-opensearch-faults', heap: '384m', logTag: 'opensearch-cluster' },
};

export const DISTRIBUTIONS = [ELASTICSEARCH, OPENSEARCH] as const;

/** The distribution a --product flag names (Elasticsearch when absent); a UsageError for any other name. */
export function distributionNamed(name: string | undefined): Distribution {
  if (name === undefined) return ELASTICSEARCH;
  const found = DISTRIBUTIONS.find((distribution) => distribution.name === name);
  if (!found) throw new UsageError(`--product: must be ${DISTRIBUTIONS.map((d) => d.name).join(' or ')} (got "${name}")`);
  return found;
}
