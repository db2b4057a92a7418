/** One Elasticsearch client per container, with a request timeout below the function's own. */
import { Client } from '@elastic/elasticsearch';

export interface ElasticsearchConnection {
  url: string;
  apiKey?: string;
  requestTimeoutMs?: number;
}

export function createElasticsearchClient(connection: ElasticsearchConnection): Client {
  return new Client({
    node: connection.url,
    ...(connection.apiKey ? { auth: { apiKey: connection.apiKey } } : {}),
    requestTimeout: connection.requestTimeoutMs ?? 5_000,
    maxRetries: 0,
    compression: false,
  });
}
