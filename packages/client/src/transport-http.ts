/**
 * The HTTP API as a Locker: fetch (Node.js 20+), JSON bodies, optionally SigV4-signed for an API
 * whose routes require IAM authorization. Error answers become the classes of errors.ts; no answer
 * at all becomes LockOutcomeUnknownError for a write (it may have applied: retry with the same
 * requestId) and StoreUnavailableError for a read.
 */
import { errorFromBody, lockError } from './errors.js';
import type { CallOptions, Locker } from './locker.js';
import { createSigV4Signer, type RequestSigner, type SigV4Options } from './sigv4.js';
import type { Operations } from './wire.js';

export interface HttpTransportOptions {
  /** The API's base URL, e.g. `https://abc123.execute-api.eu-west-1.amazonaws.com` (a stage path may follow). */
  baseUrl: string | URL;
  /** Sign every request (SigV4, service execute-api). `true`: the defaults (region from the host or AWS_REGION, the SDK's default credentials). */
  sigv4?: SigV4Options | boolean;
  /** Per request (the acquire's waitMs comes on top). Default 10 s. */
  timeoutMs?: number;
  /** Sent with every request (e.g. `x-correlation-id`). */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

export class HttpTransport implements Locker {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;
  private readonly sign: RequestSigner | undefined;

  constructor(options: HttpTransportOptions | string) {
    const resolved = typeof options === 'string' ? { baseUrl: options } : options;
    this.baseUrl = String(resolved.baseUrl).replace(/\/+$/, '');
    this.timeoutMs = resolved.timeoutMs ?? 10_000;
    this.headers = resolved.headers ?? {};
    this.fetchImpl = resolved.fetch ?? globalThis.fetch.bind(globalThis);
    const sigv4 = resolved.sigv4 === true ? {} : resolved.sigv4 || undefined;
    this.sign = sigv4 ? createSigV4Signer(sigv4, new URL(this.baseUrl)) : undefined;
  }

  acquire(body: Operations['acquire']['request'], options: CallOptions = {}): Promise<Operations['acquire']['answer']> {
    // The service may wait up to waitMs before it answers.
    return this.call('POST', '/acquire', body, { ...options, timeoutMs: (options.timeoutMs ?? this.timeoutMs) + (body.waitMs ?? 0) }, body.requestId);
  }

  renew(body: Operations['renew']['request'], options: CallOptions = {}): Promise<Operations['renew']['answer']> {
    return this.call('POST', '/renew', body, options);
  }

  release(body: Operations['release']['request'], options: CallOptions = {}): Promise<Operations['release']['answer']> {
    return this.call('POST', '/release', body, options);
  }

  inspect(query: Operations['inspect']['request'], options: CallOptions = {}): Promise<Operations['inspect']['answer']> {
    const params = new URLSearchParams({ namespace: query.namespace, granularity: query.granularity });
    for (const id of query.ids ?? []) params.append('id', id);
    if (query.path !== undefined) params.set('path', query.path);
    if (query.mode) params.set('mode', query.mode);
    return this.call('GET', `/inspect?${params}`, undefined, options);
  }

  list(query: Operations['list']['request'] = {}, options: CallOptions = {}): Promise<Operations['list']['answer']> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
    return this.call('GET', `/locks?${params}`, undefined, options);
  }

  /** GET /health: 200 when the lock store and the lock index answer. */
  health(options: CallOptions = {}): Promise<{ status: string; index: string; [field: string]: unknown }> {
    return this.call('GET', '/health', undefined, options);
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body: unknown, options: CallOptions, requestId?: string): Promise<T> {
    const url = new URL(`${this.baseUrl}${path}`);
    const text = body === undefined ? undefined : JSON.stringify(body);
    let headers: Record<string, string> = {
      accept: 'application/json',
      ...(text === undefined ? {} : { 'content-type': 'application/json' }),
      ...this.headers,
    };
    if (this.sign) headers = await this.sign({ method, url, headers, ...(text === undefined ? {} : { body: text }) });
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const signals = [AbortSignal.timeout(timeoutMs), ...(options.signal ? [options.signal] : [])];
    let response: Response;
    let answer: string;
    try {
      response = await this.fetchImpl(url, { method, headers, ...(text === undefined ? {} : { body: text }), signal: AbortSignal.any(signals) });
      answer = await response.text();
    } catch (error) {
      options.signal?.throwIfAborted();
      const why = (error as Error)?.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `${(error as Error)?.message ?? error}`;
      const cause = (error as { cause?: { message?: string } })?.cause?.message;
      const message = `${method} ${url.origin}${url.pathname}: ${why}${cause ? ` (${cause})` : ''}`;
      if (method === 'GET') throw lockError('StoreUnavailableError', `${message}. Retry.`, {}, { cause: error });
      throw lockError(
        'LockOutcomeUnknownError',
        `${message}; the call may have applied. Retry${requestId ? ` with the same requestId (${requestId})` : ''}.`,
        requestId ? { requestId } : {},
        { cause: error },
      );
    }
    const parsed = parseJson(answer);
    if (response.ok) return parsed as T;
    throw errorFromBody(withRetryAfter(parsed, response.headers), { status: response.status });
  }
}

export function httpTransport(options: HttpTransportOptions | string): HttpTransport {
  return new HttpTransport(options);
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return { message: text.slice(0, 500) };
  }
}

/** A gateway's refusal may say when to come back only in Retry-After (seconds). */
function withRetryAfter(body: unknown, headers: Headers): unknown {
  const seconds = Number(headers.get('retry-after'));
  if (!(Number.isFinite(seconds) && seconds > 0)) return body;
  const object = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  return object.retryAfterMs === undefined ? { ...object, retryAfterMs: seconds * 1000 } : object;
}
