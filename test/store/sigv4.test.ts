/**
 * Amazon OpenSearch Service authenticates every request by its SigV4 signature. A real domain is not
 * reachable from here, so a recording proxy stands in front of the project's OpenSearch: it keeps
 * each request's headers and passes it on, and the locks are taken on the real node. What a managed
 * domain would check (the signature against the role's secret) is AWS's side; ours is that every
 * request the store makes is signed for the right service, region and credentials.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLockService, createSearchClient, deleteLockIndex, ensureLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';

const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'AKIDLOCKSTEST', AWS_SECRET_ACCESS_KEY: 'secret-for-the-test', AWS_SESSION_TOKEN: 'session-token-for-the-test' };

describe.runIf(inject('searchProduct') === 'opensearch')('SigV4 (Amazon OpenSearch Service)', () => {
  const seen: IncomingHttpHeaders[] = [];
  let proxy: Server;
  let client: SearchClient;
  const saved: Record<string, string | undefined> = {};
  const index = `locks-test-sigv4-${Date.now()}`;

  beforeAll(async () => {
    const target = new URL(inject('esUrl').split(',')[0]!);
    proxy = createServer((incoming, answer) => {
      seen.push(incoming.headers);
      const forward = httpRequest(
        { host: target.hostname, port: target.port, path: incoming.url, method: incoming.method, headers: { ...incoming.headers, host: target.host } },
        (reply) => {
          answer.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(answer);
        },
      );
      incoming.pipe(forward);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    // The AWS SDK's default chain reads the environment first, as it reads the role's on Lambda.
    for (const [name, value] of Object.entries(CREDENTIALS)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
    const { port } = proxy.address() as AddressInfo;
    client = createSearchClient({ product: 'opensearch', url: `http://127.0.0.1:${port}`, sigv4: { region: 'eu-west-1' } });
    await ensureLockIndex(client, index);
  });

  afterAll(async () => {
    await deleteLockIndex(client, index);
    await client.close();
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('signs every request of a lock cycle for service es in the endpoint region, with the default chain credentials and session token', async () => {
    seen.length = 0;
    const { service: engine } = createLockService({ client, index });
    const grant = await engine.acquire({
      namespace: 'signed',
      granularity: 'document',
      ids: ['a', 'b'],
      owner: 'pipeline',
      mode: 'exclusive',
      ttlMs: 10_000,
      waitMs: 0,
    });
    await engine.renew({ leaseToken: grant.leaseToken, ttlMs: 10_000 });
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (const headers of seen) {
      expect(headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDLOCKSTEST\/\d{8}\/eu-west-1\/es\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/,
      );
      expect(headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
      expect(headers['x-amz-security-token']).toBe(CREDENTIALS.AWS_SESSION_TOKEN);
      // The body is part of the signature: a request changed on the way fails the domain's check.
      if (headers['content-length'] && headers['content-length'] !== '0') expect(headers['x-amz-content-sha256']).toMatch(/^[0-9a-f]{64}$/);
    }
  });
});
