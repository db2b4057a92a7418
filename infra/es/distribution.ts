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

/**
 * What the two products' integ-test-zips lay out alike, from the product's name, its version and the
 * prefix of the variables its start script reads (ES_JAVA_HOME, OPENSEARCH_JAVA_HOME, ...).
 */
function integTestZip(name: Distribution['name'], version: string, envPrefix: string) {
  return {
    name,
    version,
    artifact: `org.${name}.distribution.integ-test-zip:${name}:${version}:zip`,
    installDirName: `${name}-${version}`,
    bin: name,
    env: { javaHome: `${envPrefix}_JAVA_HOME`, pathConf: `${envPrefix}_PATH_CONF`, javaOpts: `${envPrefix}_JAVA_OPTS`, tmpDir: `${envPrefix}_TMPDIR` },
    configFile: `${name}.yml`,
  } satisfies Partial<Distribution>;
}

export const ELASTICSEARCH: Distribution = {
  product: 'Elasticsearch',
  // Newest 9.x on Maven Central that is not 9.5.0-9.5.2 (bulk writes could skip replicas). Keep in step with the client in package.json.
  ...integTestZip('elasticsearch', '9.4.3', 'ES'),
  minimumJava: 21,
  settingNames: { initialManagerNodes: 'cluster.initial_master_nodes', noManagerBlock: 'cluster.no_master_block' },
  // Loopback only, test node: the distribution ships the security module, which would demand TLS and passwords.
  productSettings: ['xpack.security.enabled: false'],
  urlEnv: 'ES_URL',
  nodeDirPrefix: '',
  pidFileName: 'es.pid',
  single: { portEnv: 'ES_LOCAL_PORT', port: 9200, clusterName: 'es-lease-locks', heap: '512m', logTag: 'es' },
  cluster: { portEnv: 'ES_CLUSTER_PORT', port: 9301, clusterName: 'es-lease-locks-faults', heap: '256m', logTag: 'cluster' },
};

/** Ports sit between Elasticsearch's (9200; 9301-9309, transport 9401-9409) so both products run side by side. */
export const OPENSEARCH: Distribution = {
  product: 'OpenSearch',
  // The newest 3.x with an integ-test-zip on Maven Central (3.9.0 has none).
  ...integTestZip('opensearch', '3.8.0', 'OPENSEARCH'),
  minimumJava: 21,
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
