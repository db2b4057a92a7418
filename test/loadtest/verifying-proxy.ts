/**
 * A stand-in for API Gateway's IAM check in front of the local stack: every request's SigV4
 * signature is computed again from what arrived (method, host with its port, path, query, the signed
 * headers, the body) with the expected credentials and the request's own date, and a request whose
 * signature differs, or that carries none, is refused with 403 as API Gateway would. `refuse` answers
 * chosen routes with a canned refusal instead (the kit's fast-failing check).
 */

import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([\w]+)\/(\d{8})\/([\w-]+)\/([\w-]+)\/aws4_request, SignedHeaders=([\w;-]+), Signature=([0-9a-f]{64})$/;

export interface ExpectedSigner {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  service: string;
}

export interface Refusal {
  status: number;
  body: unknown;
}

export interface VerifyingProxy {
  url: string;
  /** Requests that arrived with a valid signature, and those refused for their signature. */
  readonly verified: string[];
  readonly rejected: string[];
  /** A canned answer for a route (`GET /health`), sent without forwarding; none by default. */
  refuse: (route: string) => Refusal | undefined;
  close(): Promise<void>;
}

/** Why the request's signature is not the one `signer` would compute, or undefined when it is. */
async function signatureProblem(incoming: IncomingMessage, body: string, signer: ExpectedSigner): Promise<string | undefined> {
  const parts = AUTHORIZATION.exec(String(incoming.headers.authorization ?? ''));
  if (!parts) return 'no SigV4 authorization header';
  const [, accessKeyId, , region, service, signedHeaders, signature] = parts;
  if (accessKeyId !== signer.accessKeyId || region !== signer.region || service !== signer.service) {
    return `signed by ${accessKeyId} for ${region}/${service}, expected ${signer.accessKeyId} for ${signer.region}/${signer.service}`;
  }
  const url = new URL(incoming.url ?? '/', `http://${incoming.headers.host}`);
  const query: Record<string, string | string[]> = {};
  for (const name of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(name);
    query[name] = values.length === 1 ? values[0]! : values;
  }
  const headers = Object.fromEntries(signedHeaders!.split(';').map((name) => [name, String(incoming.headers[name] ?? '')]));
  const date = String(incoming.headers['x-amz-date']).replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z');
  const expected = await new SignatureV4({
    service,
    region,
    sha256: Sha256,
    credentials: { accessKeyId: signer.accessKeyId, secretAccessKey: signer.secretAccessKey },
  }).sign(
    {
      method: incoming.method ?? 'GET',
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query,
      headers,
      ...(body ? { body } : {}),
    },
    { signingDate: new Date(date) },
  );
  const wanted = AUTHORIZATION.exec(String(expected.headers.authorization))?.[6];
  return wanted === signature ? undefined : 'the signature does not match what arrived';
}

export async function verifyingProxy(upstreamUrl: string, signer: ExpectedSigner): Promise<VerifyingProxy> {
  const upstream = new URL(upstreamUrl);
  let server: Server;
  const proxy: VerifyingProxy = {
    url: '',
    verified: [],
    rejected: [],
    refuse: () => undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const answer = (res: import('node:http').ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  server = createServer((incoming, res) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      const route = `${incoming.method} ${(incoming.url ?? '/').split('?')[0]}`;
      const canned = proxy.refuse(route);
      if (canned) return answer(res, canned.status, canned.body);
      void signatureProblem(incoming, body.toString('utf8'), signer).then((problem) => {
        if (problem) {
          proxy.rejected.push(`${route}: ${problem}`);
          return answer(res, 403, { message: `The request signature we calculated does not match the signature you provided (${problem})` });
        }
        proxy.verified.push(route);
        const forward = httpRequest(
          { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: { ...incoming.headers, host: upstream.host } },
          (reply) => {
            res.writeHead(reply.statusCode ?? 502, reply.headers);
            reply.pipe(res);
          },
        );
        forward.on('error', () => res.destroy());
        forward.end(body);
      });
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
