/** Where tests and local runs find Elasticsearch: ES_URL (+ ES_API_KEY) when set, else the project's own node. */
import { startLocal, stopLocal } from './local.js';

export interface EsTarget {
  url: string;
  apiKey?: string;
  /** True when this process started the local node (and should stop it). */
  startedLocally: boolean;
  stop(): Promise<void>;
}

export async function resolveElasticsearch(log?: (line: string) => void): Promise<EsTarget> {
  if (process.env.ES_URL) {
    return {
      url: process.env.ES_URL,
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
