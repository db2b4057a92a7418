/**
 * Where tests and local runs find their server: ES_URL (+ ES_API_KEY) or OPENSEARCH_URL when set,
 * else the project's own node of that product.
 */
import { createElasticsearchClient } from '../../functions/store/index.js';
import { UsageError } from '../../tools/cli/flags.js';
import { type Distribution, ELASTICSEARCH, OPENSEARCH } from './distribution.js';
import { startLocal, stopLocal } from './local.js';

export interface EsTarget {
  url: string;
  apiKey?: string;
  /** True when this process started the local node (and should stop it). */
  startedLocally: boolean;
  stop(): Promise<void>;
}

/**
 * The distribution's URL variable (ES_URL, OPENSEARCH_URL) when set (one URL, or several separated
 * by commas), checked: each an http(s) URL. A UsageError naming the variable otherwise, before any
 * request goes out.
 */
export function serverUrlFromEnv(distribution: Distribution): string | undefined {
  const variable = distribution.urlEnv;
  const text = process.env[variable];
  if (!text) return undefined;
  for (const one of text.split(',')) {
    let url: URL | undefined;
    try {
      url = new URL(one.trim());
    } catch {
      url = undefined;
    }
    if (!url || !['http:', 'https:'].includes(url.protocol) || url.hostname === '') {
      throw new UsageError(
        `${variable}: must be an http(s) URL such as http://127.0.0.1:${distribution.single.port}, or several separated by commas (got "${text}")`,
      );
    }
  }
  return text;
}

export const esUrlFromEnv = (): string | undefined => serverUrlFromEnv(ELASTICSEARCH);

/** The server the variable names, else the local node of `distribution` (started when not running; `stop` stops it only then). */
async function resolveTarget(distribution: Distribution, log?: (line: string) => void): Promise<EsTarget> {
  const url = serverUrlFromEnv(distribution);
  if (url) return { url, startedLocally: false, stop: async () => {} };
  const { node, started } = await startLocal({ distribution, ...(log ? { log } : {}) });
  return {
    url: node.url,
    startedLocally: started,
    stop: async () => {
      if (started) await stopLocal({ port: node.port, distribution });
    },
  };
}

export async function resolveElasticsearch(log?: (line: string) => void): Promise<EsTarget> {
  const target = await resolveTarget(ELASTICSEARCH, log);
  // ES_API_KEY goes with the cluster ES_URL names; the local node runs without security.
  const apiKey = process.env.ES_URL ? process.env.ES_API_KEY : undefined;
  return apiKey ? { ...target, apiKey } : target;
}

/** OPENSEARCH_URL when set (credentials, if any, in the URL), else the project's OpenSearch node on 127.0.0.1:9250. */
export function resolveOpenSearch(log?: (line: string) => void): Promise<EsTarget> {
  return resolveTarget(OPENSEARCH, log);
}

/** The check's failure; `context.operation` says in the message what the request was for. */
class ServerCheckError extends Error {
  override name = 'ServerCheckError';
  readonly context = { operation: 'check that it answers, before any work' };
  constructor(product: string, cause: unknown) {
    super(`${product} did not pass the check: ${(cause as Error).message}`, { cause });
  }
}

/**
 * One cheap request (GET /_cluster/health; Elastic's integ-test-zip build has no GET / handler) that fails the way the real work would (unreachable, refused key, not
 * Elasticsearch), so a command can stop before its heavy work. A 403 passes: a key limited to the
 * lock index may not read the cluster's info, and still is accepted.
 */
export async function checkElasticsearch(url: string, apiKey?: string): Promise<void> {
  const client = createElasticsearchClient({ url: url.split(','), ...(apiKey ? { apiKey } : {}), requestTimeoutMs: 10_000 });
  try {
    await client.cluster.health({ timeout: '1s' });
  } catch (error) {
    if ((error as { meta?: { statusCode?: number } }).meta?.statusCode !== 403) throw new ServerCheckError('Elasticsearch', error);
  } finally {
    await client.close();
  }
}

/** A GET with fetch, credentials of the URL sent as Basic auth (fetch refuses URLs that carry them). */
async function getJson(base: URL, path: string): Promise<{ status: number; body: unknown }> {
  // The origin leaves the credentials out; a path prefix (a proxy's) stays.
  const url = `${base.origin}${base.pathname.replace(/\/$/, '')}${path}`;
  const headers: Record<string, string> = {};
  if (base.username) {
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`;
  }
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    // A timeout as a plain message: the error explainer would take a bare TimeoutError for the Elasticsearch client's.
    if ((error as Error).name === 'TimeoutError') throw new Error(`GET ${path}: no answer within 10 s`);
    throw error;
  }
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: response.status, body: text.slice(0, 200) };
  }
}

/**
 * The OpenSearch counterpart of checkElasticsearch, with plain fetch (the Elasticsearch client
 * refuses OpenSearch): GET / must name the opensearch distribution, and GET /_cluster/health must
 * answer. As there, a 403 passes. With several URLs, the first is asked.
 */
export async function checkOpenSearch(url: string): Promise<void> {
  try {
    const base = new URL(url.split(',')[0]!.trim());
    const root = await getJson(base, '/');
    if (root.status !== 403) {
      if (root.status !== 200) throw new Error(`GET / answered ${root.status}: ${JSON.stringify(root.body).slice(0, 200)}`);
      const distribution = (root.body as { version?: { distribution?: unknown } }).version?.distribution;
      if (distribution !== 'opensearch')
        throw new Error(`the server at ${base.origin} is not OpenSearch (GET / names distribution ${JSON.stringify(distribution)})`);
    }
    const health = await getJson(base, '/_cluster/health?timeout=1s');
    if (health.status !== 200 && health.status !== 403) {
      throw new Error(`GET /_cluster/health answered ${health.status}: ${JSON.stringify(health.body).slice(0, 200)}`);
    }
  } catch (error) {
    throw new ServerCheckError('OpenSearch', error);
  }
}
