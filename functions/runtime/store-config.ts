/**
 * Which search cluster holds the lock index, and how the functions reach it (LOCK_STORE):
 * Elasticsearch (ES_URL or ES_CLOUD_ID, an API key) or OpenSearch (OPENSEARCH_URL; SigV4-signed with
 * the function's role for Amazon OpenSearch Service). Part of the function configuration (config.ts).
 */
import { z } from 'zod';
import type { SearchConnection } from '../store/search-client.js';
import { optional, urlList } from './env.js';

export interface ElasticsearchStoreConfig {
  product: 'elasticsearch';
  /** One or more node URLs (ES_URL, comma-separated): the client spreads requests and fails over between them. */
  nodes: string[];
  /** Elastic Cloud deployment id (ES_CLOUD_ID), instead of node URLs. */
  cloudId?: string;
  /** A literal API key (local use; prefer the parameter in deployed stages). */
  apiKey?: string;
  /** SSM parameter name or Secrets Manager secret ARN holding the API key, read once per container. */
  apiKeyParameter?: string;
  /** Below the function timeout, so that a slow cluster answers 503, not a Lambda timeout. */
  requestTimeoutMs: number;
}

export interface OpenSearchStoreConfig {
  product: 'opensearch';
  /** OPENSEARCH_URL: a domain endpoint, or the nodes of a self-managed cluster. */
  nodes: string[];
  /** Set when every request is SigV4-signed (OPENSEARCH_AUTH=sigv4), with the credentials of the function's role. */
  sigv4?: { region: string; service: 'es' };
  requestTimeoutMs: number;
}

export type StoreConfig = ElasticsearchStoreConfig | OpenSearchStoreConfig;

export const storeEnv = {
  LOCK_STORE: optional(z.enum(['elasticsearch', 'opensearch'], { error: 'must be elasticsearch or opensearch' })),
  ES_URL: optional(urlList('must be http(s) URLs of Elasticsearch nodes, comma-separated')),
  ES_CLOUD_ID: optional(z.string()),
  ES_API_KEY: optional(z.string()),
  ES_API_KEY_PARAMETER: optional(z.string()),
  OPENSEARCH_URL: optional(urlList('must be http(s) URLs of OpenSearch nodes or of an Amazon OpenSearch Service domain endpoint, comma-separated')),
  OPENSEARCH_AUTH: optional(z.enum(['sigv4', 'none'], { error: 'must be sigv4 (Amazon OpenSearch Service, signed with the function role) or none' })),
  OPENSEARCH_SIGV4_SERVICE: optional(z.enum(['es', 'aoss'], { error: 'must be es (an Amazon OpenSearch Service domain)' })),
  OPENSEARCH_REGION: optional(z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, { error: 'must be an AWS region such as eu-west-1' })),
  AWS_REGION: optional(z.string()),
};

type StoreEnv = z.output<z.ZodObject<typeof storeEnv>>;

/** AWS endpoints: a domain's (`search-…` or `vpc-….<region>.es.amazonaws.com`), a collection's (`….aoss.amazonaws.com`), China's `.com.cn`. */
const AWS_HOST = /\.amazonaws\.com(\.cn)?$/;
const AWS_ENDPOINT = /\.([a-z]{2}(?:-[a-z]+)+-\d+)\.(es|aoss)\.amazonaws\.com(?:\.cn)?$/;

/**
 * Why OpenSearch Serverless is refused. The lock's safety rests on conditional writes
 * (`if_seq_no` / `if_primary_term`) judged by one primary shard, and on realtime GETs that see the
 * latest write without a refresh. AWS documents collections as a different subset of the OpenSearch
 * API, with indexing and search on separate compute over S3 and refreshes 10 s or more apart, and
 * does not promise either guarantee there; a managed domain is an ordinary cluster that keeps both.
 */
const SERVERLESS_REFUSED =
  'OpenSearch Serverless collections (aoss) cannot hold the lock index: the lock needs if_seq_no/if_primary_term conditional writes on one primary shard and realtime GETs, which AWS does not document for collections (a subset of the API, indexing and search on separate compute, refreshes 10 s or more apart); use an Amazon OpenSearch Service domain (es)';

const hostsOf = (urls: string[]) => urls.map((url) => new URL(url).hostname.toLowerCase());

export function readStoreConfig(e: StoreEnv, requestTimeoutMs: number, problems: string[]): StoreConfig {
  return (e.LOCK_STORE ?? 'elasticsearch') === 'opensearch' ? openSearch(e, requestTimeoutMs, problems) : elasticsearch(e, requestTimeoutMs, problems);
}

function elasticsearch(e: StoreEnv, requestTimeoutMs: number, problems: string[]): ElasticsearchStoreConfig {
  if (e.ES_API_KEY && e.ES_API_KEY_PARAMETER) problems.push('ES_API_KEY and ES_API_KEY_PARAMETER are both set; keep one');
  if (!e.ES_URL && !e.ES_CLOUD_ID) {
    // OPENSEARCH_URL without LOCK_STORE is most likely a forgotten LOCK_STORE: say so rather than only ask for ES_URL.
    problems.push(`ES_URL: is required (or ES_CLOUD_ID)${e.OPENSEARCH_URL ? '; OPENSEARCH_URL is set: for OpenSearch, set LOCK_STORE=opensearch' : ''}`);
  }
  if (e.ES_URL && e.ES_CLOUD_ID) problems.push('ES_URL and ES_CLOUD_ID are both set; keep one');
  return {
    product: 'elasticsearch',
    nodes: e.ES_URL ?? [],
    ...(e.ES_CLOUD_ID ? { cloudId: e.ES_CLOUD_ID } : {}),
    ...(e.ES_API_KEY ? { apiKey: e.ES_API_KEY } : {}),
    ...(e.ES_API_KEY_PARAMETER ? { apiKeyParameter: e.ES_API_KEY_PARAMETER } : {}),
    requestTimeoutMs,
  };
}

function openSearch(e: StoreEnv, requestTimeoutMs: number, problems: string[]): OpenSearchStoreConfig {
  // ES_URL and ES_API_KEY_PARAMETER are not read: serverless.yml's default params fill them in every
  // stage (ES_URL from the shell, the SSM parameter's name), and neither is a credential. A literal
  // key or a Cloud ID is another matter: whoever set it expects it to be used.
  if (e.ES_API_KEY) {
    problems.push(
      'ES_API_KEY: must not be set with LOCK_STORE=opensearch: OpenSearch takes no Elasticsearch API key, so it would be silently ignored (Amazon OpenSearch Service authenticates the function role with SigV4: OPENSEARCH_AUTH=sigv4)',
    );
  }
  if (e.ES_CLOUD_ID)
    problems.push('ES_CLOUD_ID: must not be set with LOCK_STORE=opensearch: an Elastic Cloud deployment is Elasticsearch; give OPENSEARCH_URL');
  const nodes = e.OPENSEARCH_URL ?? [];
  if (nodes.length === 0) problems.push('OPENSEARCH_URL: is required with LOCK_STORE=opensearch');
  const hosts = hostsOf(nodes);

  const serverless = e.OPENSEARCH_SIGV4_SERVICE === 'aoss';
  if (serverless) problems.push(`OPENSEARCH_SIGV4_SERVICE: ${SERVERLESS_REFUSED}`);
  else if (hosts.some((host) => AWS_ENDPOINT.exec(host)?.[2] === 'aoss')) problems.push(`OPENSEARCH_URL: ${SERVERLESS_REFUSED}`);

  // Default: sign when every URL is an AWS endpoint (a domain refuses unsigned requests unless its
  // access policy is open, which it should not be), and never sign for other hosts, which would
  // receive the role's session token. A custom domain endpoint (own hostname) therefore needs
  // OPENSEARCH_AUTH=sigv4 set explicitly; an explicit setting always wins.
  const auth = e.OPENSEARCH_AUTH ?? (hosts.length > 0 && hosts.every((host) => AWS_HOST.test(host)) ? 'sigv4' : 'none');
  const base = { product: 'opensearch' as const, nodes, requestTimeoutMs };
  if (auth === 'none') {
    const why = e.OPENSEARCH_AUTH ? 'OPENSEARCH_AUTH=none' : 'OPENSEARCH_AUTH is none by default for hosts outside amazonaws.com';
    for (const field of ['OPENSEARCH_SIGV4_SERVICE', 'OPENSEARCH_REGION'] as const) {
      if (e[field] && !(field === 'OPENSEARCH_SIGV4_SERVICE' && serverless)) {
        problems.push(`${field}: only applies to SigV4-signed requests (${why}); set OPENSEARCH_AUTH=sigv4 or remove it`);
      }
    }
    return base;
  }

  if (nodes.some((url) => !url.startsWith('https://'))) {
    problems.push('OPENSEARCH_URL: must be https:// with OPENSEARCH_AUTH=sigv4 (a signed request carries the role session token)');
  }
  // The signature must name the domain's region: the endpoint's own, when its hostname says it.
  const endpointRegions = [...new Set(hosts.map((host) => AWS_ENDPOINT.exec(host)?.[1]).filter((region) => region !== undefined))];
  if (endpointRegions.length > 1)
    problems.push(`OPENSEARCH_URL: names endpoints in several regions (${endpointRegions.join(', ')}); give one domain's endpoint`);
  const region = e.OPENSEARCH_REGION ?? endpointRegions[0] ?? e.AWS_REGION;
  if (e.OPENSEARCH_REGION && endpointRegions.length === 1 && e.OPENSEARCH_REGION !== endpointRegions[0]) {
    problems.push(
      `OPENSEARCH_REGION (${e.OPENSEARCH_REGION}) differs from the region of the OPENSEARCH_URL endpoint (${endpointRegions[0]}): the domain would refuse the signatures`,
    );
  }
  if (!region) problems.push('OPENSEARCH_REGION: is required for SigV4 (AWS_REGION is not set and OPENSEARCH_URL names no region)');
  return { ...base, sigv4: { region: region ?? '', service: 'es' } };
}

/** The client connection for a store configuration; `apiKey` is the Elasticsearch key once its secret is read. */
export function searchConnection(store: StoreConfig, apiKey?: string): SearchConnection {
  if (store.product === 'opensearch') {
    return { product: 'opensearch', url: store.nodes, ...(store.sigv4 ? { sigv4: store.sigv4 } : {}), requestTimeoutMs: store.requestTimeoutMs };
  }
  return {
    product: 'elasticsearch',
    ...(store.cloudId ? { cloudId: store.cloudId } : { url: store.nodes }),
    ...(apiKey ? { apiKey } : {}),
    requestTimeoutMs: store.requestTimeoutMs,
  };
}
