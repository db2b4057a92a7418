/** Where tests and local runs find Elasticsearch: ES_URL (+ ES_API_KEY) when set, else the project's own node. */
import { createElasticsearchClient } from '../../functions/store/index.js';
import { UsageError } from '../lib/cli.js';
import { startLocal, stopLocal } from './local.js';

export interface EsTarget {
  url: string;
  apiKey?: string;
  /** True when this process started the local node (and should stop it). */
  startedLocally: boolean;
  stop(): Promise<void>;
}

/**
 * ES_URL when set (one URL, or several separated by commas), checked: each an http(s) URL. A
 * UsageError naming ES_URL otherwise, before any request goes out.
 */
export function esUrlFromEnv(): string | undefined {
  const text = process.env.ES_URL;
  if (!text) return undefined;
  for (const one of text.split(',')) {
    let url: URL | undefined;
    try {
      url = new URL(one.trim());
    } catch {
      url = undefined;
    }
    if (!url || !['http:', 'https:'].includes(url.protocol) || url.hostname === '') {
      throw new UsageError(`ES_URL: must be an http(s) URL such as http://127.0.0.1:9200, or several separated by commas (got "${text}")`);
    }
  }
  return text;
}

export async function resolveElasticsearch(log?: (line: string) => void): Promise<EsTarget> {
  const url = esUrlFromEnv();
  if (url) {
    return {
      url,
      ...(process.env.ES_API_KEY ? { apiKey: process.env.ES_API_KEY } : {}),
      startedLocally: false,
      stop: async () => {},
    };
  }
  const { node, started } = await startLocal(log ? { log } : {});
  return {
    url: node.url,
    startedLocally: started,
    stop: async () => {
      if (started) await stopLocal({ port: node.port });
    },
  };
}

/** The check's failure; `context.operation` says in the message what the request was for. */
class ElasticsearchCheckError extends Error {
  override name = 'ElasticsearchCheckError';
  readonly context = { operation: 'check that it answers, before any work' };
  constructor(cause: unknown) {
    super(`Elasticsearch did not pass the check: ${(cause as Error).message}`, { cause });
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
    if ((error as { meta?: { statusCode?: number } }).meta?.statusCode !== 403) throw new ElasticsearchCheckError(error);
  } finally {
    await client.close();
  }
}
