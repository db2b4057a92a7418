/**
 * Which search server a command works on, decided the same way for every CLI, and every client for
 * it made here, so that no command repeats how each product is chosen and reached.
 *
 * The product: `--store`, else LOCK_STORE (what the functions read), else opensearch when
 * OPENSEARCH_URL is set and ES_URL is not, else elasticsearch. The server: the product's URL variable
 * (ES_URL with ES_API_KEY; OPENSEARCH_URL, signed as the functions sign it), else the project's own
 * node of that product, started when it does not run.
 *
 *   const { values } = parseFlags(argv, { ...STORE_FLAG });
 *   const store = await resolveStore(chooseStore(values.store));
 *   const client = store.client();
 */
import { z } from 'zod';
import { readStoreConfig, storeEnv } from '../../functions/runtime/store-config.js';
import { createSearchClient, SEARCH_PRODUCTS, type SearchClient, type SearchConnection, type SearchProduct } from '../../functions/store/search-client.js';
import { type FlagSpec, UsageError } from '../../tools/cli/flags.js';
import { type Distribution, ELASTICSEARCH, OPENSEARCH } from '../es/distribution.js';
import { checkElasticsearch, checkOpenSearch, type EsTarget, resolveElasticsearch, resolveOpenSearch, serverUrlFromEnv } from '../es/target.js';

/** The flag, for a command's parseFlags spec. */
export const STORE_FLAG = { store: { type: 'string' } } as const satisfies FlagSpec;

/** The flag's rule in words, for a command's usage text. */
export const STORE_RULE = `${SEARCH_PRODUCTS.join(' or ')} (default: LOCK_STORE, or opensearch when only OPENSEARCH_URL is set)`;

type Env = Record<string, string | undefined>;

/** The product named by --store or the environment; a UsageError naming the flag (or LOCK_STORE) and the rule otherwise. */
export function chooseStore(flag: unknown, env: Env = process.env): SearchProduct {
  if (flag !== undefined) return productNamed('--store', String(flag));
  const lockStore = env.LOCK_STORE?.trim();
  if (lockStore) return productNamed('LOCK_STORE', lockStore);
  // OPENSEARCH_URL alone can only mean an OpenSearch: the tools follow it (the functions, stricter, ask for LOCK_STORE).
  return env.OPENSEARCH_URL?.trim() && !env.ES_URL?.trim() ? 'opensearch' : 'elasticsearch';
}

function productNamed(source: string, value: string): SearchProduct {
  const product = SEARCH_PRODUCTS.find((name) => name === value);
  if (!product) throw new UsageError(`${source}: must be ${SEARCH_PRODUCTS.join(' or ')} (got "${value}")`);
  return product;
}

/** A server of one product, as the tools reach it. */
export interface StoreEndpoint {
  readonly product: SearchProduct;
  /** As messages name it: Elasticsearch, OpenSearch. */
  readonly name: string;
  /** One URL, or several separated by commas. */
  readonly url: string;
  /** How a client reaches it (for createLockService, openEngineTarget). */
  connection(options?: { requestTimeoutMs?: number }): SearchConnection;
  /** A new client for it (the caller closes it). */
  client(options?: { requestTimeoutMs?: number }): SearchClient;
  /** LOCK_STORE and the variables the functions reach this server with. */
  functionEnv(): Record<string, string>;
  /** One cheap request that fails as the real work would (unreachable, refused, another product), before that work starts. */
  check(): Promise<void>;
}

/** A resolved server: the user's, or the project's own node (started if it was not running). */
export interface StoreTarget extends StoreEndpoint {
  /** No URL variable named a server: this is the project's own node. */
  readonly ownNode: boolean;
  /** Stops the project's node if this process started it. */
  stop(): Promise<void>;
}

/** How a client authenticates: an Elasticsearch API key, or SigV4 for Amazon OpenSearch Service. */
type Access = Pick<SearchConnection, 'apiKey' | 'sigv4'>;

/** What differs between the products, as data; the code below never asks which product it has. */
interface ProductWays {
  distribution: Distribution;
  resolve(log?: (line: string) => void): Promise<EsTarget>;
  /** The credentials `env` gives for a server at `url`. */
  access(url: string, env: Env): Access;
  /** The functions' variables for those credentials. */
  accessEnv(access: Access): Record<string, string>;
  check(url: string, access: Access): Promise<void>;
}

const WAYS: Record<SearchProduct, ProductWays> = {
  elasticsearch: {
    distribution: ELASTICSEARCH,
    resolve: resolveElasticsearch,
    access: (_url, env) => (env.ES_API_KEY ? { apiKey: env.ES_API_KEY } : {}),
    accessEnv: (access): Record<string, string> => (access.apiKey ? { ES_API_KEY: access.apiKey } : {}),
    check: (url, access) => checkElasticsearch(url, access.apiKey),
  },
  opensearch: {
    distribution: OPENSEARCH,
    resolve: resolveOpenSearch,
    access: openSearchAccess,
    accessEnv: (access) => ({
      OPENSEARCH_AUTH: access.sigv4 ? 'sigv4' : 'none',
      ...(access.sigv4 ? { OPENSEARCH_REGION: access.sigv4.region } : {}),
      // Blank counts as unset: an Elasticsearch key in the shell would make the functions refuse to start on OpenSearch.
      ES_API_KEY: '',
    }),
    check: (url) => checkOpenSearch(url),
  },
};

/**
 * SigV4 or nothing for an OpenSearch URL, by the functions' own rules (functions/runtime/store-config.ts):
 * OPENSEARCH_AUTH, else signed for *.amazonaws.com endpoints only; the region from OPENSEARCH_REGION,
 * the endpoint or AWS_REGION. Their refusals come back as one UsageError naming the variables.
 */
function openSearchAccess(url: string, env: Env): Access {
  const parsed = z.object(storeEnv).safeParse({
    LOCK_STORE: 'opensearch',
    OPENSEARCH_URL: url,
    OPENSEARCH_AUTH: env.OPENSEARCH_AUTH,
    OPENSEARCH_SIGV4_SERVICE: env.OPENSEARCH_SIGV4_SERVICE,
    OPENSEARCH_REGION: env.OPENSEARCH_REGION,
    AWS_REGION: env.AWS_REGION,
  });
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
  const problems: string[] = [];
  const config = readStoreConfig(parsed.data, 0, problems);
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  return config.product === 'opensearch' && config.sigv4 ? { sigv4: config.sigv4 } : {};
}

/** The server of `product` at `url`, with the credentials `env` gives for it (none for the project's own node). */
export function storeAt(product: SearchProduct, url: string, env: Env = {}): StoreEndpoint {
  const ways = WAYS[product];
  const access = ways.access(url, env);
  const connection = (options: { requestTimeoutMs?: number } = {}): SearchConnection => ({
    product,
    url: url.split(',').map((one) => one.trim()),
    ...access,
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
  });
  return {
    product,
    name: ways.distribution.product,
    url,
    connection,
    client: (options) => createSearchClient(connection(options)),
    functionEnv: () => ({ LOCK_STORE: product, [ways.distribution.urlEnv]: url, ...ways.accessEnv(access) }),
    check: () => ways.check(url, access),
  };
}

/** The server the product's URL variable names (ES_URL, OPENSEARCH_URL), checked for form; undefined when it is not set. Starts nothing. */
export function givenStore(product: SearchProduct): StoreEndpoint | undefined {
  const url = serverUrlFromEnv(WAYS[product].distribution);
  return url === undefined ? undefined : storeAt(product, url, process.env);
}

/** How the project runs its own nodes of `product` (single node, 3-node cluster). */
export const storeDistribution = (product: SearchProduct): Distribution => WAYS[product].distribution;

/** The variable that names the user's own server of `product` (ES_URL, OPENSEARCH_URL). */
export const storeUrlVariable = (product: SearchProduct): string => WAYS[product].distribution.urlEnv;

/** How log lines about the product's own node are tagged ("[es] starting ..."). */
export const storeLogTag = (product: SearchProduct): string => WAYS[product].distribution.single.logTag;

/**
 * The server the product's URL variable names, else the project's own node of that product (started
 * when it does not run). `overrides` win over the environment: a caller's own ES_URL (with ES_API_KEY)
 * or OPENSEARCH_URL, which nobody here starts or stops.
 */
export async function resolveStore(product: SearchProduct, log?: (line: string) => void, overrides: Env = {}): Promise<StoreTarget> {
  const ways = WAYS[product];
  const override = overrides[ways.distribution.urlEnv];
  if (override) return { ...storeAt(product, override, overrides), ownNode: false, stop: async () => {} };
  const given = serverUrlFromEnv(ways.distribution) !== undefined;
  const target = await ways.resolve(log);
  return { ...storeAt(product, target.url, given ? process.env : {}), ownNode: !given, stop: () => target.stop() };
}
