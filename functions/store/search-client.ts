/**
 * The search cluster as the store sees it: the part of the Elasticsearch client's API the project
 * uses, whichever product answers. Elasticsearch gets its own client; OpenSearch (self-managed or
 * Amazon OpenSearch Service) gets the official OpenSearch client behind the same shape
 * (opensearch-client.ts), so the store, the lock index's management and the tools are written once.
 */
import type { Client } from '@elastic/elasticsearch';
import { createElasticsearchClient } from './client.js';
import { createOpenSearchClient } from './opensearch-client.js';

export type SearchProduct = 'elasticsearch' | 'opensearch';

export const SEARCH_PRODUCTS: readonly SearchProduct[] = ['elasticsearch', 'opensearch'];

type Methods<T, K extends keyof T> = Pick<T, K>;

/**
 * What the lock store, the lock index's management, the tools and the tests call. (`transport` is
 * there for the types only: the Elasticsearch client's methods declare it on `this`.)
 */
export type SearchClient = Methods<
  Client,
  'get' | 'mget' | 'bulk' | 'create' | 'index' | 'delete' | 'search' | 'searchShards' | 'count' | 'info' | 'close' | 'transport'
> & {
  /**
   * Whole, for the types only (its methods declare private fields on `this`): the project calls
   * refresh, create, delete, exists, existsAlias, get, getAlias, getMapping, putMapping,
   * putSettings, clone, addBlock and updateAliases, which is what the OpenSearch adapter translates.
   */
  indices: Client['indices'];
  /** Whole, likewise: the project calls health. */
  cluster: Client['cluster'];
  /** Whole, likewise: the tools call info (the server's version, where GET / has no handler: Elastic's test build). */
  nodes: Client['nodes'];
  /** Request and response events (the correlation-id test, request counting). */
  diagnostic: Methods<Client['diagnostic'], 'on' | 'off'>;
  /** Which product answers: the store names it in messages, the tools in their reports. */
  readonly product?: SearchProduct;
};

export interface SearchConnection {
  /** Default `elasticsearch`. */
  product?: SearchProduct;
  /** One node, or several of a self-managed cluster (the client round-robins and fails over between them). */
  url?: string | string[];
  /** Elasticsearch only: an Elastic Cloud deployment, instead of `url`. */
  cloudId?: string;
  /** Elasticsearch only. */
  apiKey?: string;
  /**
   * OpenSearch only: sign every request with SigV4 (Amazon OpenSearch Service), with credentials from
   * the AWS SDK's default provider chain: the Lambda's role, or the profile and environment locally.
   */
  sigv4?: { region: string; service?: 'es' | 'aoss' };
  requestTimeoutMs?: number;
}

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
