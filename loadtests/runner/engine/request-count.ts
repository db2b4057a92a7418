/**
 * The requests the engine sends to the lock store, counted from the search client's diagnostic
 * events: in all, by kind (writes, reads, refreshes, searches: what the deployment model weighs),
 * and per operation (the operation whose async context sent the request).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { SearchClient } from '../../../functions/store/search-client.js';
import { noRequests, type PerKind, type RequestKind } from '../model.js';

/** The kind of an Elasticsearch request by its method and path: what the replicas repeat, what reads a copy, refreshes, searches. */
export function requestKind(method: string, path: string): RequestKind | undefined {
  if (path.includes('/_bulk')) return 'write';
  if (path.includes('/_refresh')) return 'refresh';
  if (/\/_(search|search_shards|count)\b/.test(path)) return 'search';
  if (/\/_(mget|doc)\b/.test(path) && (method === 'GET' || (method === 'POST' && path.includes('/_mget')))) return 'read';
  if (method === 'DELETE') return !path.startsWith('/_') && !/^\/[^/]+$/.test(path) ? 'write' : undefined;
  if ((method === 'PUT' || method === 'POST') && /\/_(doc|create|update)\//.test(path)) return 'write';
  return undefined;
}

/** Requests of the operation running in the current async context, by kind (the counter listens to the client). */
const operationRequests = new AsyncLocalStorage<PerKind>();

/** Runs `operation` with the requests it sends to the lock store counted into `requests`. */
export function attributeRequests<T>(requests: PerKind, operation: () => Promise<T>): Promise<T> {
  return operationRequests.run(requests, operation);
}

export interface RequestCounter {
  /** Requests sent through the client since counting began, in all and by kind. */
  totals(): { total: number; byKind: PerKind };
  stop(): void;
}

/** Counts every request `client` sends from now on. */
export function countRequests(client: SearchClient): RequestCounter {
  let total = 0;
  const byKind = noRequests();
  const count = (_error: unknown, event: { meta?: { request?: { params?: { method?: string; path?: string } } } } | null): void => {
    total++;
    const params = event?.meta?.request?.params;
    const kind = params ? requestKind(String(params.method ?? ''), String(params.path ?? '')) : undefined;
    if (!kind) return;
    byKind[kind]++;
    // The client emits this within the caller's async context: the operation that sent the request.
    const operation = operationRequests.getStore();
    if (operation) operation[kind]++;
  };
  client.diagnostic.on('request', count);
  return {
    totals: () => ({ total, byKind: { ...byKind } }),
    stop: () => client.diagnostic.off('request', count),
  };
}
