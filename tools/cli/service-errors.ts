/**
 * Why a service did not answer, in words a person can act on: a search client's or fetch()'s network
 * failure, a refusal (401/403), a server that is not Elasticsearch, each naming the server (the
 * project's own node, ES_URL, OPENSEARCH_URL) and what to set or start. runCli prints these.
 *
 *   error: cannot reach Elasticsearch at http://127.0.0.1:9999
 *     tried:  HEAD /_alias/locks (to create lock index)
 *     failed: connection refused (ECONNREFUSED)
 *     to fix: start the project's node with `npm run es:start` (status: `npm run es:status`)
 */

/** A service (Elasticsearch, the lock service, a port) did not answer or refused: what was tried, what failed, what to do. */
export class ServiceError extends Error {
  override name = 'ServiceError';
  constructor(
    readonly problem: { headline: string; tried: string; failed: string; fix: string[] },
    options?: { cause?: unknown },
  ) {
    super(
      [
        `${problem.headline}`,
        `  tried:  ${problem.tried}`,
        `  failed: ${problem.failed}`,
        ...problem.fix.map((line, i) => `  ${i === 0 ? 'to fix:' : '       '} ${line}`),
      ].join('\n'),
      options,
    );
  }
}

const LOCAL_ES_URL = `http://127.0.0.1:${process.env.ES_LOCAL_PORT ?? 9200}`;

interface Failure {
  /** What answered or not: "connection refused (ECONNREFUSED)", "401 Unauthorized". */
  failed: string;
  kind: 'unreachable' | 'timeout' | 'unauthorized' | 'forbidden' | 'tls' | 'not-elasticsearch';
  url?: string;
  /** "HEAD /_alias/locks" */
  request?: string;
  /** What the request was for, from the store's errors: "create lock index". */
  operation?: string;
  elasticsearch: boolean;
}

const causes = (error: unknown): unknown[] => {
  const chain: unknown[] = [];
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 8; at = (at as { cause?: unknown }).cause, depth++) chain.push(at);
  return chain;
};

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  CERT_HAS_EXPIRED: 'TLS certificate expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed TLS certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'self-signed TLS certificate in the chain',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS certificate is for another host name',
  ERR_SSL_WRONG_VERSION_NUMBER: 'TLS handshake failed: the server does not speak https there',
};

/** "connection refused (ECONNREFUSED)" for a network error code, undefined for an unknown one. */
const networkCode = (code: string | undefined): string | undefined => (code && NETWORK_CODES[code] ? `${NETWORK_CODES[code]} (${code})` : undefined);

/** OpenSSL's text ("...:SSL routines:...:wrong version number:...") as a code of NETWORK_CODES, if it is one we know. */
const tlsCode = (message: string): string | undefined => (/wrong version number/i.test(message) ? 'ERR_SSL_WRONG_VERSION_NUMBER' : undefined);

/**
 * What went wrong on the network in a failed fetch() or socket ("connection refused (ECONNREFUSED)"),
 * looking through causes; undefined when the error says no more than its message.
 */
export function networkProblem(error: unknown): string | undefined {
  for (const link of causes(error)) {
    const { code, message } = (link ?? {}) as { code?: string; message?: string };
    const known = networkCode(code) ?? networkCode(/\b(E[A-Z_]{3,}|UND_ERR_[A-Z_]+)\b/.exec(message ?? '')?.[1]) ?? networkCode(tlsCode(message ?? ''));
    if (known) return known;
  }
  return undefined;
}

/** The network failure in an @elastic/elasticsearch or fetch error (looking through causes), if that is what it is. */
function findFailure(error: unknown): Failure | undefined {
  let operation: string | undefined;
  for (const link of causes(error)) {
    if (!(link instanceof Error)) continue;
    // The store's errors (StoreUnavailableError, StoreRejectedError) say what the request was for.
    operation ??= (link as { context?: { operation?: unknown } }).context?.operation as string | undefined;
    const meta = (
      link as { meta?: { statusCode?: number; meta?: { connection?: { url?: unknown }; request?: { params?: { method?: string; path?: string } } } } }
    ).meta;
    const url = meta?.meta?.connection?.url ? String(meta.meta.connection.url).replace(/\/$/, '') : undefined;
    const params = meta?.meta?.request?.params;
    const request = params?.method && params.path ? `${params.method} ${params.path}` : undefined;
    const base = { ...(url ? { url } : {}), ...(request ? { request } : {}), ...(operation ? { operation } : {}), elasticsearch: true };
    switch (link.name) {
      case 'ConnectionError': {
        const tls = tlsCode(link.message);
        if (tls) return { ...base, kind: 'tls', failed: networkCode(tls)! };
        const code = /\b(E[A-Z_]{3,}|UND_ERR_[A-Z_]+|[A-Z_]*CERT[A-Z_]*)\b/.exec(link.message)?.[1];
        const kind = code && /CERT|TLS|SSL/.test(code) ? 'tls' : 'unreachable';
        return { ...base, kind, failed: networkCode(code) ?? link.message.split('\n')[0]! };
      }
      case 'NoLivingConnectionsError':
        return { ...base, kind: 'unreachable', failed: 'no node of the cluster answers' };
      case 'TimeoutError':
        return { ...base, kind: 'timeout', failed: `no answer in time (${link.message})` };
      case 'ProductNotSupportedError':
        return { ...base, kind: 'not-elasticsearch', failed: 'the server answered, but it is not Elasticsearch (no x-elastic-product header)' };
      case 'ResponseError': {
        const status = meta?.statusCode;
        if (status === 401) return { ...base, kind: 'unauthorized', failed: '401 Unauthorized: the credentials were refused' };
        if (status === 403) return { ...base, kind: 'forbidden', failed: '403 Forbidden: the credentials lack a privilege for this request' };
        break;
      }
    }
    // fetch(): TypeError "fetch failed" whose cause carries the code, address and port.
    const net = link as { code?: string; address?: string; port?: number };
    if (link.message === 'fetch failed') {
      const cause = (link as { cause?: { code?: string; address?: string; port?: number; message?: string } }).cause;
      const netCode = cause?.code ?? '';
      return {
        kind: netCode.includes('TIMEOUT') ? 'timeout' : 'unreachable',
        failed: networkProblem(link) ?? cause?.message ?? 'fetch failed',
        ...(cause?.address && cause.port ? { url: `http://${cause.address}:${cause.port}` } : {}),
        elasticsearch: false,
      };
    }
    if (net.code && NETWORK_CODES[net.code] && net.address && net.port) {
      return { kind: 'unreachable', failed: networkCode(net.code)!, url: `http://${net.address}:${net.port}`, elasticsearch: false };
    }
  }
  return undefined;
}

const sameHostPort = (a: string, b: string): boolean => {
  try {
    return new URL(a).host === new URL(b).host;
  } catch {
    return false;
  }
};

/** What a person sets or runs to reach each search server, so that a failure's fix names the server that failed. */
interface ServerHints {
  name: string;
  /** The variable that names the user's own server. */
  urlEnv: string;
  /** The project's own node. */
  localUrl: string;
  /** `npm run <script>:start` starts that node. */
  script: string;
  /** What to check on a 401; `own` is what to set with the URL when pointing at a server of one's own. */
  unauthorized: () => string;
  forbidden: string;
  own: string;
  /** How a command comes back to the project's own node once the URL variable is gone. */
  ownNode: string;
}

const ELASTICSEARCH_HINTS: ServerHints = {
  name: 'Elasticsearch',
  urlEnv: 'ES_URL',
  localUrl: LOCAL_ES_URL,
  script: 'es',
  unauthorized: () =>
    process.env.ES_API_KEY
      ? 'check ES_API_KEY: the cluster does not accept it (expired, revoked, or for another cluster)'
      : 'set ES_API_KEY to an API key of that cluster',
  forbidden: "check ES_API_KEY's privileges: it needs to read and write the lock index (and create it, for index:create)",
  own: 'ES_URL (and ES_API_KEY)',
  ownNode: "or unset ES_URL to use the project's own node (`npm run es:start`)",
};

const OPENSEARCH_HINTS: ServerHints = {
  name: 'OpenSearch',
  urlEnv: 'OPENSEARCH_URL',
  localUrl: `http://127.0.0.1:${process.env.OPENSEARCH_LOCAL_PORT ?? 9250}`,
  script: 'opensearch',
  unauthorized: () =>
    'check the credentials: user:password in OPENSEARCH_URL, or the AWS credentials SigV4 signs with (OPENSEARCH_AUTH=sigv4, OPENSEARCH_REGION)',
  forbidden: 'check the privileges of that user or role: it needs to read and write the lock index (and create it, for index:create)',
  own: 'OPENSEARCH_URL',
  // Without OPENSEARCH_URL the commands default to Elasticsearch again: the flag keeps them on OpenSearch.
  ownNode: "or unset OPENSEARCH_URL and give --store opensearch to use the project's own node (`npm run opensearch:start`)",
};

/** The server whose variable or local node names the failure's address; Elasticsearch for a client error that names none. */
function serverOf(failure: Failure): ServerHints | undefined {
  const at = failure.url;
  const named = (hints: ServerHints): boolean =>
    at !== undefined && [process.env[hints.urlEnv] ?? '', hints.localUrl].some((list) => list.split(',').some((one) => sameHostPort(one, at)));
  return [OPENSEARCH_HINTS, ELASTICSEARCH_HINTS].find(named) ?? (failure.elasticsearch ? ELASTICSEARCH_HINTS : undefined);
}

/** What to do about `failure` on `server`. */
function serverFix(failure: Failure, server: ServerHints): string[] {
  const given = process.env[server.urlEnv];
  const now = given ? ` (now ${given})` : '';
  switch (failure.kind) {
    case 'unauthorized':
      return [server.unauthorized()];
    case 'forbidden':
      return [server.forbidden];
    case 'tls':
      return [
        `check the scheme and certificate of ${server.urlEnv}${now}: http:// for a node without TLS, https:// with a certificate this machine trusts (NODE_EXTRA_CA_CERTS)`,
      ];
    case 'not-elasticsearch':
      return [`check ${server.urlEnv}${now}: it should name an ${server.name} node, not another service`];
    default:
      return given
        ? [`check ${server.urlEnv}${now}: is that cluster up${failure.kind === 'timeout' ? ', not overloaded,' : ''} and reachable from here?`, server.ownNode]
        : [
            `start the project's node with \`npm run ${server.script}:start\` (status: \`npm run ${server.script}:status\`)`,
            `or set ${server.own} to a cluster of your own`,
          ];
  }
}

/**
 * A search client's error (ConnectionError, TimeoutError, ResponseError 401/403, also wrapped in the
 * store's errors) or a failed fetch, as a ServiceError saying what to do; undefined otherwise.
 */
export function explainServiceError(error: unknown): ServiceError | undefined {
  if (error instanceof ServiceError) return error;
  const failure = findFailure(error);
  if (!failure) return undefined;
  const server = serverOf(failure);
  const url = failure.url ?? (server ? (process.env[server.urlEnv] ?? server.localUrl) : undefined);
  const where = url ? ` at ${url}` : '';
  const what = server?.name ?? 'the service';
  const fix = server
    ? serverFix(failure, server)
    : [failure.kind === 'timeout' ? `check that the service${where} is up and not overloaded` : `start the service${where}, or check the URL you gave`];
  const verb =
    failure.kind === 'unauthorized' || failure.kind === 'forbidden'
      ? 'refused by'
      : failure.kind === 'timeout'
        ? 'no answer from'
        : failure.kind === 'tls'
          ? 'no secure connection to'
          : 'cannot reach';
  const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
  const tried = failure.request
    ? `${failure.request}${failure.operation ? ` (to ${failure.operation})` : ''}`
    : message !== failure.failed && message !== 'fetch failed'
      ? message
      : `a request to ${url ?? 'the service'}`;
  const headline = failure.kind === 'not-elasticsearch' ? `the server${where} is not Elasticsearch` : `${verb} ${what}${where}`;
  return new ServiceError({ headline, tried, failed: failure.failed, fix }, { cause: error });
}
