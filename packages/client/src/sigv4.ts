/**
 * SigV4 for the HTTP API (API Gateway with IAM authorization: service `execute-api`), with the AWS
 * SDK's own signer and, unless given, the SDK's default credentials chain (environment, SSO, the
 * shared files, the Lambda function's role...). The SDK modules load on the first signed request,
 * so a caller that never signs never pays for loading them.
 */

/** AWS credentials (structurally the SDK's AwsCredentialIdentity). */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** A function that returns credentials, e.g. one of @aws-sdk/credential-providers. */
export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

export interface SigV4Options {
  /** Default: the region in an `execute-api.<region>.amazonaws.com` host name, else AWS_REGION / AWS_DEFAULT_REGION. */
  region?: string;
  /** Default `execute-api`. */
  service?: string;
  /** Default: the SDK's default chain (@aws-sdk/credential-provider-node), resolved once and refreshed before expiry. */
  credentials?: AwsCredentials | AwsCredentialsProvider;
}

export interface SignableRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

/** Returns the headers to send: the request's own plus authorization, x-amz-date and x-amz-security-token. */
export type RequestSigner = (request: SignableRequest) => Promise<Record<string, string>>;

/** `abc123.execute-api.eu-west-1.amazonaws.com` → `eu-west-1`. */
export function regionOfHost(hostname: string): string | undefined {
  return /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(hostname)?.[1];
}

export function createSigV4Signer(options: SigV4Options, baseUrl: URL): RequestSigner {
  const region = options.region ?? regionOfHost(baseUrl.hostname) ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  if (!region) throw new TypeError(`sigv4: no region for ${baseUrl.host}: pass sigv4.region, or set AWS_REGION`);
  const service = options.service ?? 'execute-api';
  let loading: Promise<Signer> | undefined;
  const signer = (): Promise<Signer> => {
    loading ??= loadSigner(region, service, options.credentials).catch((error: unknown) => {
      // A module that failed to load (not installed) is tried again on the next request.
      loading = undefined;
      throw error;
    });
    return loading;
  };
  return async ({ method, url, headers, body }) => {
    const query: Record<string, string | string[]> = {};
    for (const name of new Set(url.searchParams.keys())) {
      const values = url.searchParams.getAll(name);
      query[name] = values.length === 1 ? values[0]! : values;
    }
    const signed = await (await signer()).sign({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: url.pathname,
      query,
      // The host is signed as fetch will send it (with the port when there is one).
      headers: { ...headers, host: url.host },
      ...(body === undefined ? {} : { body }),
    });
    const { host: _host, ...rest } = signed.headers;
    return rest;
  };
}

interface Signer {
  sign(request: {
    method: string;
    protocol: string;
    hostname: string;
    port?: number;
    path: string;
    query: Record<string, string | string[]>;
    headers: Record<string, string>;
    body?: string;
  }): Promise<{ headers: Record<string, string> }>;
}

async function loadSigner(region: string, service: string, credentials: SigV4Options['credentials']): Promise<Signer> {
  const [{ SignatureV4 }, { Sha256 }] = await Promise.all([import('@smithy/signature-v4'), import('@aws-crypto/sha256-js')]);
  const resolved = credentials ?? (await import('@aws-sdk/credential-provider-node')).defaultProvider();
  return new SignatureV4({ service, region, credentials: resolved, sha256: Sha256 }) as Signer;
}
