/**
 * A small typed client for the lock service's HTTP API (fetch; Node.js 24 and browsers). Error
 * answers come back as the engine's error classes (LockHeldError, LeaseLostError, ...).
 */
import { StoreUnavailableError } from '../core/errors.js';
import type { GrantBody, LockStateBody, ReleaseResultBody as ReleaseBody, RenewalBody } from '../runtime/present.js';
import { errorFromResponse } from './errors.js';

export type { GrantBody, LockStateBody, ReleaseResultBody as ReleaseBody, RenewalBody } from '../runtime/present.js';

export interface AcquireBody {
  namespace: string;
  granularity: 'global' | 'document' | 'tree';
  ids?: string[];
  path?: string;
  mode?: 'exclusive' | 'shared';
  owner: string;
  ttlMs?: number;
  waitMs?: number;
  requestId?: string;
}

export interface InspectQuery {
  namespace: string;
  granularity: 'global' | 'document' | 'tree';
  ids?: string[];
  path?: string;
  mode?: 'exclusive' | 'shared';
}

export interface ListQuery {
  namespace?: string;
  granularity?: 'global' | 'document' | 'tree';
  owner?: string;
  pathPrefix?: string;
  limit?: number;
  includeExpired?: boolean;
}

export interface LockHttpClientOptions {
  baseUrl: string;
  /** Per request; above the server's own wait (waitMs) is added on acquire. Default 10 s. */
  timeoutMs?: number;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

export class LockHttpClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;

  constructor(options: LockHttpClientOptions | string) {
    const resolved = typeof options === 'string' ? { baseUrl: options } : options;
    this.baseUrl = resolved.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = resolved.timeoutMs ?? 10_000;
    this.headers = resolved.headers ?? {};
    this.fetchImpl = resolved.fetch ?? globalThis.fetch.bind(globalThis);
  }

  acquire(body: AcquireBody): Promise<GrantBody> {
    return this.call('POST', '/acquire', body, this.timeoutMs + (body.waitMs ?? 0));
  }

  renew(body: { leaseToken: string; ttlMs?: number }): Promise<RenewalBody> {
    return this.call('POST', '/renew', body);
  }

  release(body: { leaseToken: string }): Promise<ReleaseBody> {
    return this.call('POST', '/release', body);
  }

  async inspect(query: InspectQuery): Promise<LockStateBody[]> {
    const params = new URLSearchParams({ namespace: query.namespace, granularity: query.granularity });
    for (const id of query.ids ?? []) params.append('id', id);
    if (query.path !== undefined) params.set('path', query.path);
    if (query.mode) params.set('mode', query.mode);
    return (await this.call<{ locks: LockStateBody[] }>('GET', `/inspect?${params}`)).locks;
  }

  async list(query: ListQuery = {}): Promise<LockStateBody[]> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
    return (await this.call<{ locks: LockStateBody[] }>('GET', `/locks?${params}`)).locks;
  }

  health(): Promise<{ status: 'ok'; elasticsearch: { status: string }; index: string }> {
    return this.call('GET', '/health');
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...this.headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      // No answer: the call may or may not have applied (retry acquire with the same requestId).
      throw new StoreUnavailableError(`No answer from ${this.baseUrl}${path}: ${(error as Error).message}`, {
        operation: `http ${method} ${path}`,
        ambiguous: method === 'POST',
        cause: error,
      });
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = { message: text.slice(0, 500) };
    }
    if (response.ok) return parsed as T;
    throw errorFromResponse(response.status, parsed, response.headers);
  }
}
