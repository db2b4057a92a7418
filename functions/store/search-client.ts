/**
 * The search cluster as the store sees it: the part of the Elasticsearch client's API the project
 * uses, whichever product answers. Elasticsearch gets its own client; OpenSearch (self-managed or
 * Amazon OpenSearch Service) gets the official OpenSearch client behind the same shape
 * (opensearch-client.ts), so the store, the lock index's management and the tools are written once.
 */
import { createElasticsearchClient } from './client.js';
import { createOpenSearchClient } from './opensearch-client.js';
import type { SearchClient, SearchConnection, SearchProduct } from './search-types.js';

export type { SearchClient, SearchConnection, SearchProduct } from './search-types.js';
export { SEARCH_PRODUCTS } from './search-types.js';

export function createSearchClient(connection: SearchConnection): SearchClient {
  const product = connection.product ?? 'elasticsearch';
  if (product === 'opensearch') {
    if (connection.cloudId) throw new Error('An Elastic Cloud ID reaches Elasticsearch, not OpenSearch: give the OpenSearch URL instead');
    if (connection.apiKey) throw new Error('OpenSearch takes no Elasticsearch API key: use SigV4 (Amazon OpenSearch Service) or none');
    return createOpenSearchClient(connection);
  }
  if (connection.sigv4) throw new Error('SigV4 signing is for Amazon OpenSearch Service: set the product to opensearch');
  return Object.assign(createElasticsearchClient(connection), { product: 'elasticsearch' as const });
}

/** The product a client talks to (a client the caller built themselves is an Elasticsearch one unless it says otherwise). */
export const productOf = (client: SearchClient): SearchProduct => client.product ?? 'elasticsearch';

/** The product as messages name it. */
export const serverName = (client: SearchClient): string => (productOf(client) === 'opensearch' ? 'OpenSearch' : 'Elasticsearch');
