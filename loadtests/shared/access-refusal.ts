/**
 * A refused or failed call to a deployed stage, in one line that names what is missing: API
 * Gateway's IAM check (execute-api:Invoke), the functions' namespace policy (AccessDeniedError), or
 * the kit's signing proxy (no credentials, target unreachable). Used by the runner's check before
 * any k6 run and by the k6 script's setup(), so both say the same thing.
 */

export interface RefusedCall {
  method: string;
  /** The route, e.g. `/acquire`. */
  path: string;
  status: number;
  body: string;
  /** The stage's base URL, for the route's ARN when API Gateway's answer does not give it. */
  target: string;
  /** The namespace the call locked in (acquire). */
  namespace?: string;
}

/** The error name the signing proxy answers with when it could not sign or forward a request. */
export const SIGNING_PROXY_ERROR = 'SigningProxyError';

function parsed(body: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(body);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** `abc123.execute-api.eu-west-1.amazonaws.com` → `arn:aws:execute-api:eu-west-1:*:abc123/*\/POST/acquire`; another host: `<host> POST /acquire`. */
export function routeArn(target: string, method: string, path: string): string {
  const host = /^https?:\/\/([^/:]+)/.exec(target)?.[1] ?? target;
  const api = /^([a-z0-9]+)\.execute-api\.([a-z0-9-]+)\.amazonaws\.com/.exec(host);
  return api ? `arn:aws:execute-api:${api[2]}:*:${api[1]}/*/${method}${path}` : `${host} ${method} ${path}`;
}

/** The one line for a call that did not get the answer the kit needs, or undefined when it did (2xx). */
export function explainRefusal(call: RefusedCall): string | undefined {
  if (call.status >= 200 && call.status < 300) return undefined;
  const body = parsed(call.body);
  const message = typeof body.message === 'string' ? body.message : call.body.slice(0, 200);
  if (body.error === SIGNING_PROXY_ERROR) return `${call.method} ${call.path}: ${message}`;
  if (call.status === 403 && body.error === 'AccessDeniedError') {
    const who = typeof body.principal === 'string' ? body.principal : "the kit's role";
    const namespace = typeof body.namespace === 'string' ? body.namespace : (call.namespace ?? 'the kit namespace');
    return `the namespace policy does not allow ${who} to acquire in ${namespace} (the kit locks in lt-* namespaces; reason: ${String(body.reason ?? 'not given')})`;
  }
  if (call.status === 403 || call.status === 401) {
    // API Gateway names the resource when the caller is known but not allowed; otherwise the route's ARN stands in.
    const resource = /execute-api:Invoke on resource: ([^\s"]+)/.exec(message)?.[1] ?? routeArn(call.target, call.method, call.path);
    const who = /User: ([^\s"]+) is not authorized/.exec(message)?.[1];
    if (/not authorized|^forbidden$/i.test(message) || message === '') {
      return `the kit's role${who ? ` (${who})` : ''} lacks execute-api:Invoke on ${resource}`;
    }
    return `${call.method} ${call.path} refused with ${call.status}: ${message}`;
  }
  if (call.status === 0) return `${call.method} ${call.target}${call.path} answered nothing: ${message || 'no connection'}`;
  return `${call.method} ${call.target}${call.path} answered ${call.status}: ${message}`;
}
