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
  // The check that a conditional write's incarnation is still behind the alias.
  if (method === 'HEAD' && /\/_alias\//.test(path)) return 'read';
  if (method === 'DELETE') return !path.startsWith('/_') && !/^\/[^/]+$/.test(path) ? 'write' : undefined;
  if ((method === 'PUT' || method === 'POST') && /\/_(doc|create|update)\//.test(path)) return 'write';
  return undefined;
}

type DiagnosticEvent = { meta?: { request?: { id?: unknown; params?: { method?: string; path?: string } } } };

/** Requests of the operation running in the current async context, by kind (the counter listens to the client). */
const operationRequests = new AsyncLocalStorage<PerKind>();

/** Runs `operation` with the requests it sends to the lock store counted into `requests`. */
export function attributeRequests<T>(requests: PerKind, operation: () => Promise<T>): Promise<T> {
  return operationRequests.run(requests, operation);
}

export interface RequestCounts {
  total: number;
  byKind: PerKind;
  /** Time the answered requests of each kind took, summed, and how many were answered: the latency under the load that ran. */
  answered: { ms: PerKind; count: PerKind };
}

export interface RequestCounter {
  /** Requests sent through the client since counting began, in all and by kind. */
  totals(): RequestCounts;
  stop(): void;
}

/** Counts every request `client` sends from now on. */
export function countRequests(client: SearchClient): RequestCounter {
  let total = 0;
  const byKind = noRequests();
  const answered = { ms: noRequests(), count: noRequests() };
  const sentAt = new Map<unknown, { kind: RequestKind; at: number }>();
  const count = (_error: unknown, event: DiagnosticEvent | null): void => {
    total++;
    const params = event?.meta?.request?.params;
    const kind = params ? requestKind(String(params.method ?? ''), String(params.path ?? '')) : undefined;
    if (!kind) return;
    byKind[kind]++;
    const id = event?.meta?.request?.id;
    if (id !== undefined) sentAt.set(id, { kind, at: performance.now() });
    // The client emits this within the caller's async context: the operation that sent the request.
    const operation = operationRequests.getStore();
    if (operation) operation[kind]++;
  };
  const answer = (error: { meta?: DiagnosticEvent['meta'] } | null, event: DiagnosticEvent | null): void => {
    const id = (event ?? error)?.meta?.request?.id;
    const sent = id === undefined ? undefined : sentAt.get(id);
    if (!sent) return;
    sentAt.delete(id);
    answered.ms[sent.kind] += performance.now() - sent.at;
    answered.count[sent.kind]++;
  };
  // The listeners see the client's events as plain objects: the shapes above are all they read.
  const events = client.diagnostic as unknown as Record<'on' | 'off', (event: string, listener: (...args: never[]) => void) => void>;
  events.on('request', count);
  events.on('response', answer);
  return {
    totals: () => ({ total, byKind: { ...byKind }, answered: { ms: { ...answered.ms }, count: { ...answered.count } } }),
    stop: () => {
      events.off('request', count);
      events.off('response', answer);
    },
  };
}
