/**
 * The kit's way to a deployed stage: an HTTP server on 127.0.0.1 that forwards each request to the
 * target, signed with SigV4 (service execute-api) from the caller's AWS credential chain. k6 and the
 * warm-up send plain HTTP to it; the signer is the client package's (the SDK's SignatureV4 and
 * default chain, which refreshes credentials before they expire), so secrets never reach k6 and the
 * signed body is exactly the one forwarded.
 */
import { createServer, Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { type AwsCredentialsProvider, createSigV4Signer, regionOfHost } from '../../packages/client/src/sigv4.js';
import { SIGNING_PROXY_ERROR } from '../shared/access-refusal.js';
import { ConfigError } from './config-error.js';

export interface SigningProxy {
  /** Where to send requests instead of the target: http://127.0.0.1:<port>. */
  url: string;
  /** The region the requests are signed for. */
  region: string;
  close(): Promise<void>;
}

export interface SigningOptions {
  /** Default: the target's `execute-api.<region>` host, else AWS_REGION / AWS_DEFAULT_REGION. */
  region?: string;
  /** Default: the SDK's default chain (tests pass static ones through the environment). */
  credentials?: AwsCredentialsProvider;
}

// Hop-by-hop headers are the proxy's own business, on each side.
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);

/** The region requests to `target` are signed for, or a ConfigError saying how to give one. */
export function signingRegion(target: string, given?: string): string {
  const region = given ?? regionOfHost(new URL(target).hostname) ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  if (!region) throw new ConfigError(`--target ${target}: no region to sign for (the host names none); give --region, or set AWS_REGION`);
  return region;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function refuse(answer: ServerResponse, status: number, message: string): void {
  if (answer.headersSent) return void answer.destroy();
  answer.writeHead(status, { 'Content-Type': 'application/json' });
  answer.end(JSON.stringify({ error: SIGNING_PROXY_ERROR, message }));
}

export async function startSigningProxy(target: string, options: SigningOptions = {}): Promise<SigningProxy> {
  const base = new URL(target);
  const region = signingRegion(target, options.region);
  const sign = createSigV4Signer({ region, ...(options.credentials ? { credentials: options.credentials } : {}) }, base);
  const secure = base.protocol === 'https:';
  // Kept-alive connections: a TLS handshake per request would cost more than the signature.
  const agent = secure ? new HttpsAgent({ keepAlive: true, maxSockets: 512 }) : new HttpAgent({ keepAlive: true, maxSockets: 512 });
  const send = secure ? httpsRequest : httpRequest;
  const prefix = base.pathname.replace(/\/+$/, '');

  const forward = async (incoming: IncomingMessage, answer: ServerResponse): Promise<void> => {
    const body = await readBody(incoming);
    const url = new URL(`${prefix}${incoming.url ?? '/'}`, base);
    const method = incoming.method ?? 'GET';
    const contentType = incoming.headers['content-type'];
    let headers: Record<string, string>;
    try {
      headers = await sign({
        method,
        url,
        headers: contentType ? { 'content-type': contentType } : {},
        ...(body.length > 0 ? { body: body.toString('utf8') } : {}),
      });
    } catch (error) {
      return refuse(answer, 500, `no AWS credentials to sign with: ${(error as Error).message.split('\n')[0]}`);
    }
    const outgoing: OutgoingHttpHeaders = { ...headers, host: url.host, 'content-length': body.length };
    const upstream = send(url, { method, headers: outgoing, agent }, (reply) => {
      const replyHeaders = Object.fromEntries(Object.entries(reply.headers).filter(([name]) => !HOP_HEADERS.has(name)));
      answer.writeHead(reply.statusCode ?? 502, replyHeaders);
      reply.pipe(answer);
    });
    upstream.setTimeout(30_000, () => upstream.destroy(new Error('no answer within 30 s')));
    upstream.on('error', (error) => refuse(answer, 502, `cannot reach ${base.origin}: ${(error as NodeJS.ErrnoException).code ?? error.message}`));
    upstream.end(body);
  };

  const server = createServer((incoming, answer) => {
    forward(incoming, answer).catch((error: unknown) => refuse(answer, 500, (error as Error).message));
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    region,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}
