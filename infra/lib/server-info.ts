/**
 * Which server and version answered, for the reports: figures from Elasticsearch and from OpenSearch
 * (or from two versions of one) are not comparable without it.
 */
import { productOf, type SearchClient } from '../../functions/store/search-client.js';
import { ELASTICSEARCH, OPENSEARCH } from '../es/distribution.js';

export interface ServerInfo {
  /** Elasticsearch or OpenSearch, as the server says of itself. */
  product: string;
  /** `version.number`; undefined when the server would not say (a key without the privilege). */
  version?: string;
}

interface RootAnswer {
  version?: { number?: string; distribution?: string };
}

interface NodesAnswer {
  nodes?: Record<string, { version?: string }>;
}

/**
 * GET / (`version.number`; OpenSearch adds `version.distribution: "opensearch"`), else the local
 * node's info: Elastic's test build has no handler for GET / (405). Never fails: a report is worth
 * more without the version than not at all.
 */
export async function describeServer(client: SearchClient): Promise<ServerInfo> {
  const expected = productOf(client) === 'opensearch' ? OPENSEARCH.product : ELASTICSEARCH.product;
  try {
    const root = (await client.info()) as RootAnswer;
    if (root.version?.number) {
      return { product: root.version.distribution === 'opensearch' ? OPENSEARCH.product : ELASTICSEARCH.product, version: root.version.number };
    }
  } catch {
    // No GET / here: the nodes API below names the version.
  }
  try {
    const answer = (await client.nodes.info({ node_id: '_local', metric: '_none' })) as NodesAnswer;
    const version = Object.values(answer.nodes ?? {})[0]?.version;
    return version ? { product: expected, version } : { product: expected };
  } catch {
    return { product: expected };
  }
}

/** "OpenSearch 3.8.0", "Elasticsearch (version unknown)". */
export const serverLabel = (server: ServerInfo): string => `${server.product} ${server.version ?? '(version unknown)'}`;
