/**
 * The three transports, each through a whole lock cycle on the real stack: HTTP, HTTP signed with
 * SigV4 (every request checked at a recording proxy, and its signature recomputed from what arrived),
 * and direct invocation through the AWS SDK's Lambda client on the local invoke API.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { httpTransport, invokeTransport } from '@es-lease-locks/client';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterEach, expect, it } from 'vitest';
import type { ClientStack } from '../support/client-stack.js';
import { TEST_CREDENTIALS } from '../support/client-stack.js';
import { type Recorded, type RecordingProxy, recordingProxy } from '../support/recording-proxy.js';
import { lockCycle } from './lock-cycle.js';

export const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=(\w+)\/(\d{8})\/([\w-]+)\/([\w-]+)\/aws4_request, SignedHeaders=([\w;-]+), Signature=([0-9a-f]{64})$/;

/** The signature the request should carry, computed again from what reached the proxy, with the same credentials and date. */
export async function expectedSignature(request: Recorded, proxyUrl: string, region: string, service: string): Promise<string> {
  const [, , , , , signedHeaders] = AUTHORIZATION.exec(String(request.headers.authorization))!;
  const url = new URL(request.path, proxyUrl);
  const headers = Object.fromEntries(signedHeaders!.split(';').map((name) => [name, String(request.headers[name])]));
  const query: Record<string, string | string[]> = {};
  for (const name of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(name);
    query[name] = values.length === 1 ? values[0]! : values;
  }
  const signer = new SignatureV4({
    service,
    region,
    sha256: Sha256,
    credentials: {
      accessKeyId: TEST_CREDENTIALS.AWS_ACCESS_KEY_ID,
      secretAccessKey: TEST_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
      sessionToken: TEST_CREDENTIALS.AWS_SESSION_TOKEN,
    },
  });
  const date = String(request.headers['x-amz-date']).replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z');
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query,
      headers,
      body: request.body || undefined,
    },
    { signingDate: new Date(date) },
  );
  return AUTHORIZATION.exec(String(signed.headers.authorization))![6]!;
}

async function expectSignedBy(proxy: RecordingProxy, service: string, region: string): Promise<void> {
  expect(proxy.requests.length).toBeGreaterThanOrEqual(6);
  for (const request of proxy.requests) {
    const what = `${request.method} ${request.path}`;
    const parts = AUTHORIZATION.exec(String(request.headers.authorization));
    expect(parts, what).not.toBeNull();
    const [, accessKeyId, day, signedRegion, signedService, signedHeaders, signature] = parts!;
    expect({ accessKeyId, signedRegion, signedService }, what).toEqual({
      accessKeyId: TEST_CREDENTIALS.AWS_ACCESS_KEY_ID,
      signedRegion: region,
      signedService: service,
    });
    expect(request.headers['x-amz-date'], what).toMatch(new RegExp(`^${day}T\\d{6}Z$`));
    expect(request.headers['x-amz-security-token'], what).toBe(TEST_CREDENTIALS.AWS_SESSION_TOKEN);
    expect(signedHeaders!.split(';'), what).toEqual(expect.arrayContaining(['host', 'x-amz-date', 'x-amz-security-token']));
    // What arrived (host with its port, path, query, body) is what was signed: a verifying gateway would accept it.
    expect(signature, what).toBe(await expectedSignature(request, proxy.url, region, service));
  }
}

export function transportSpecs(stack: ClientStack): void {
  let proxy: RecordingProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  it('HTTP: a whole lock cycle, error answers as their classes with every detail', async () => {
    await lockCycle(httpTransport(stack.details.baseUrl), 'cycle-http', { detailedErrors: true });
  });

  it('HTTP signed with SigV4: every request carries a signature for execute-api, the region, the default chain credentials and session token', async () => {
    proxy = await recordingProxy(stack.details.baseUrl);
    await lockCycle(httpTransport({ baseUrl: proxy.url, sigv4: { region: 'eu-central-1' } }), 'cycle-signed', { detailedErrors: true });
    expect(new Set(proxy.requests.map((request) => request.path.split('?')[0]))).toEqual(new Set(['/acquire', '/inspect', '/renew', '/release']));
    await expectSignedBy(proxy, 'execute-api', 'eu-central-1');
  });

  it("Lambda invoke: a whole lock cycle through the AWS SDK's Lambda client, one function per operation, refusals mapped back to their classes by name", async () => {
    proxy = await recordingProxy(stack.details.lambdaUrl);
    const transport = invokeTransport({
      functions: (operation) => stack.details.functionName(operation),
      clientConfig: { endpoint: proxy.url, region: 'eu-west-1' },
    });
    // A direct invocation's refusal carries its name and message; its details only when the function puts them in errorMessage.
    await lockCycle(transport, 'cycle-invoke', { detailedErrors: false });
    const invoked = proxy.requests.map((request) => decodeURIComponent(request.path.split('/')[3]!));
    expect(new Set(invoked)).toEqual(new Set(['acquire', 'inspect', 'renew', 'release'].map((operation) => stack.details.functionName(operation))));
    await expectSignedBy(proxy, 'lambda', 'eu-west-1');
  });
}
