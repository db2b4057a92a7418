/** One Elasticsearch client per container, with a request timeout below the function's own. */
import { Client } from '@elastic/elasticsearch';

export interface ElasticsearchConnection {
  /** One node, or several of a self-managed cluster (the client round-robins and fails over between them). */
  url?: string | string[];
  /** An Elastic Cloud deployment, instead of `url`. */
  cloudId?: string;
  apiKey?: string;
  requestTimeoutMs?: number;
}

export function createElasticsearchClient(connection: ElasticsearchConnection): Client {
  const nodes = typeof connection.url === 'string' ? [connection.url] : (connection.url ?? []);
  if (!connection.cloudId && nodes.length === 0) throw new Error('An Elasticsearch connection needs a node URL or a Cloud ID');
  return new Client({
    ...(connection.cloudId ? { cloud: { id: connection.cloudId } } : { nodes }),
    ...(connection.apiKey ? { auth: { apiKey: connection.apiKey } } : {}),
    requestTimeout: connection.requestTimeoutMs ?? 5_000,
    maxRetries: 0,
    compression: false,
  });
}
