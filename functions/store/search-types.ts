/**
 * The search cluster as the store sees it: the part of the Elasticsearch client's API the project
 * uses, whichever product answers, and how to reach it. A module of its own so that each product's
 * client factory can use the shapes without importing the code that chooses between them.
 */
import type { Client } from '@elastic/elasticsearch';

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
