/**
 * The backend of a deployed stage: its HTTP API, every request SigV4-signed (service execute-api)
 * with the caller's credential chain, by the client package's own signer. `sweep` has no route: it
 * invokes the stage's sweeper function directly instead (sweeper-invoke.ts).
 */

import { errorFromBody } from '../packages/client/src/errors.js';
import { createSigV4Signer, type RequestSigner } from '../packages/client/src/sigv4.js';
import type { InspectQuery, ListQuery, LockStatesBody } from '../packages/client/src/wire.js';
import { UsageError } from '../tools/cli/flags.js';
import { networkProblem, ServiceError } from '../tools/cli/service-errors.js';
import type { AdminInput } from './admin-types.js';
import type { OpsBackend } from './backend.js';

export interface StageOptions {
  /** The API's base URL (a stage path may follow). */
  url: string;
  /** Else the region in an execute-api host name, else AWS_REGION. */
  region?: string;
  /** No signature: a local stack (serverless-offline) checks none. */
  unsigned?: boolean;
  timeoutMs?: number;
}

/** The base URL of --url or LOCKS_URL, checked for form. */
export function stageUrl(text: string, source: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol)) {
    throw new UsageError(`${source}: must be the API's http(s) URL, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com (got "${text}")`);
  }
  return url;
}

function signerFor(options: StageOptions, base: URL): RequestSigner | undefined {
  if (options.unsigned) return undefined;
  try {
    return createSigV4Signer(options.region ? { region: options.region } : {}, base);
  } catch {
    throw new UsageError(`--region: needed to sign for ${base.host} (not an execute-api host name): give --region or set AWS_REGION`);
  }
}

/** A failure before any answer: the signer found no credentials, or the API did not answer. */
function callFailure(error: unknown, method: string, url: URL, timeoutMs: number): Error {
  const { name, message } = (error ?? {}) as { name?: string; message?: string };
  if (name === 'CredentialsProviderError' || /credential/i.test(message ?? '')) {
    return new Error(
      `no AWS credentials to sign ${method} ${url.pathname} with (${message?.split('\n')[0]}): set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or --unsigned for a local stack`,
      { cause: error },
    );
  }
  const tried = `${method} ${url.pathname}`;
  const fix = ['check --url (or LOCKS_URL): is the stage deployed, and reachable from here?'];
  if (name === 'TimeoutError') {
    return new ServiceError(
      { headline: `no answer from the lock service at ${url.origin}`, tried, failed: `no answer within ${timeoutMs / 1000} s`, fix },
      { cause: error },
    );
  }
  const failed = networkProblem(error) ?? message ?? String(error);
  return new ServiceError({ headline: `cannot reach the lock service at ${url.origin}`, tried, failed, fix }, { cause: error });
}

export function httpBackend(options: StageOptions): OpsBackend {
  const base = stageUrl(options.url, '--url');
  const prefix = base.href.replace(/\/+$/, '');
  const sign = signerFor(options, base);
  const timeoutMs = options.timeoutMs ?? 15_000;

  const call = async <T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> => {
    const url = new URL(`${prefix}${path}`);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { accept: 'application/json', ...(text === undefined ? {} : { 'content-type': 'application/json' }) };
    let response: Response;
    let answer: string;
    try {
      const sent = sign ? await sign({ method, url, headers, ...(text === undefined ? {} : { body: text }) }) : headers;
      response = await fetch(url, { method, headers: sent, ...(text === undefined ? {} : { body: text }), signal: AbortSignal.timeout(timeoutMs) });
      answer = await response.text();
    } catch (error) {
      throw callFailure(error, method, url, timeoutMs);
    }
    const parsed = parseJson(answer);
    if (response.ok) return parsed as T;
    // Which call was refused, for the one line the operator reads.
    throw Object.assign(errorFromBody(parsed, { status: response.status }), { request: `${method} ${url.pathname}` });
  };

  const states = async (path: string): Promise<LockStatesBody['locks']> => (await call<LockStatesBody>('GET', path)).locks;

  return {
    list: (query: ListQuery) => states(`/locks?${listParams(query)}`),
    inspect: (query: InspectQuery) => states(`/inspect?${inspectParams(query)}`),
    // The stage records the caller's IAM principal; a --by is kept beside it ("<principal> (as <by>)").
    revoke: (input: AdminInput) => call('POST', '/revoke', input),
    drain: (input: AdminInput) => call('POST', '/drain', input),
    status: () => call('GET', '/status'),
    sweep: async () => {
      throw new UsageError('--stage or --sweeper-function: sweep over a stage invokes its sweeper function (the HTTP API has no sweep route)');
    },
    close: async () => {},
  };
}

/** The query GET /locks reads. */
export function listParams(query: ListQuery): URLSearchParams {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  return params;
}

/** The query GET /inspect reads: one `id` per document id (as the client package sends them). */
export function inspectParams(query: InspectQuery): URLSearchParams {
  const params = new URLSearchParams({ namespace: query.namespace, granularity: query.granularity });
  for (const id of query.ids ?? []) params.append('id', id);
  if (query.path !== undefined) params.set('path', query.path);
  if (query.mode) params.set('mode', query.mode);
  return params;
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return { message: text.slice(0, 300) };
  }
}
