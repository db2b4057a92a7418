/**
 * The operator's CLI against a stage: the local stack (Elasticsearch and serverless-offline with the
 * bundled functions) with a namespace policy, behind a recording proxy where every request of the
 * CLI is checked for a valid SigV4 signature (recomputed from what arrived); and `sweep` through the
 * sweeper function, invoked directly on the local Lambda invoke API.
 *
 * serverless-offline authenticates nothing: the hop after the recording proxy names the caller as
 * API Gateway would after checking the signature (its `sls-offline-authorizer-override` header).
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LeaseLostError } from '../../packages/engine/src/errors.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { AUTHORIZATION, expectedSignature } from '../client/specs/transports.js';
import { clientStack, TEST_CREDENTIALS } from '../client/support/client-stack.js';
import { type RecordingProxy, recordingProxy } from '../client/support/recording-proxy.js';
import { engineOn, testClient } from '../support/engine.js';
import { iamCaller } from '../support/lambda-events.js';
import { ops, rowsOf } from './support.js';

const ACCOUNT = '123456789012';
const ONCALL = `arn:aws:sts::${ACCOUNT}:assumed-role/oncall/alice`;
const DASHBOARD = `arn:aws:sts::${ACCOUNT}:assumed-role/dashboard/bob`;
const POLICY = {
  allow: [
    { principals: [`arn:aws:iam::${ACCOUNT}:role/oncall`], actions: ['revoke', 'inspect', 'list'], namespaces: ['*'] },
    // Everything `*` grants, which is not revoke.
    { principals: [`arn:aws:iam::${ACCOUNT}:role/dashboard`], actions: ['*'], namespaces: ['*'] },
  ],
};

// The stack's functions read LOCK_POLICY from the environment serverless-offline starts with.
const savedPolicy = process.env.LOCK_POLICY;
process.env.LOCK_POLICY = JSON.stringify(POLICY);
const stack = clientStack('ops');
const REGION = 'eu-central-1';
let client: SearchClient;
let engine: LockService;
let identity: IdentityHop;
let proxy: RecordingProxy | undefined;

/** Forwards to the stack with the caller it names (`caller`), as API Gateway passes on the principal it authenticated. */
interface IdentityHop {
  url: string;
  caller: string;
  close(): Promise<void>;
}

async function identityHop(target: string): Promise<IdentityHop> {
  const upstream = new URL(target);
  let server: Server;
  const hop: IdentityHop = {
    url: '',
    caller: ONCALL,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  server = createServer((incoming, answer) => {
    const headers = { ...incoming.headers, host: upstream.host, 'sls-offline-authorizer-override': JSON.stringify({ iam: iamCaller(hop.caller) }) };
    const forward = httpRequest({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers }, (reply) => {
      answer.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(answer);
    });
    forward.on('error', () => incoming.socket.destroy());
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hop.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return hop;
}

beforeAll(async () => {
  client = testClient();
  // No clock-skew allowance of its own: the lock index's, as the stage's functions take it.
  engine = engineOn(client, stack.details.lockIndex, { maxClockSkewMs: undefined });
  identity = await identityHop(stack.details.baseUrl);
});
afterAll(async () => {
  await identity?.close();
  await client?.close();
  if (savedPolicy === undefined) delete process.env.LOCK_POLICY;
  else process.env.LOCK_POLICY = savedPolicy;
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  identity.caller = ONCALL;
});

/** The CLI's flags for the stage, through a fresh recording proxy. */
async function stage(): Promise<string[]> {
  proxy = await recordingProxy(identity.url);
  return ['--url', proxy.url, '--region', REGION];
}

/** Every request at the proxy was signed for execute-api in REGION with the caller's credentials, and its signature is right. */
async function expectSigned(at: RecordingProxy): Promise<void> {
  expect(at.requests.length).toBeGreaterThan(0);
  for (const request of at.requests) {
    const what = `${request.method} ${request.path}`;
    const parts = AUTHORIZATION.exec(String(request.headers.authorization));
    expect(parts, what).not.toBeNull();
    const [, accessKeyId, , region, service, , signature] = parts!;
    expect({ accessKeyId, region, service }, what).toEqual({ accessKeyId: TEST_CREDENTIALS.AWS_ACCESS_KEY_ID, region: REGION, service: 'execute-api' });
    expect(request.headers['x-amz-security-token'], what).toBe(TEST_CREDENTIALS.AWS_SESSION_TOKEN);
    expect(signature, what).toBe(await expectedSignature(request, at.url, REGION, 'execute-api'));
  }
}

describe('over the signed HTTP API', () => {
  it('list and inspect: the same table as straight against the cluster, every request SigV4-signed', async () => {
    const flags = await stage();
    const grant = await engine.acquire({ namespace: 'ops-stage', granularity: 'tree', path: '/x/y', owner: 'alice', ttlMs: 30_000 });
    await client.indices.refresh({ index: stack.details.lockIndex });

    const listed = await ops(['list', '--namespace', 'ops-stage', '--owner', 'alice', ...flags]);
    expect(listed.code, listed.err).toBe(0);
    // The API does not show queues: "?".
    expect(rowsOf(listed.out)[1]).toEqual(['ops-stage', 'tree', '/x/y', 'alice', 'X', expect.stringMatching(/^in (2\d|30)s$/), grant.fencingToken, '?']);
    const inspected = await ops(['inspect', 'ops-stage/tree//x/y', '--json', ...flags]);
    expect(inspected.code, inspected.err).toBe(0);
    expect(JSON.parse(inspected.out).locks).toEqual([expect.objectContaining({ key: '/x/y', holders: [expect.objectContaining({ owner: 'alice' })] })]);
    await engine.release({ leaseToken: grant.leaseToken });
    expect((await ops(['inspect', 'ops-stage/tree//x/y', ...flags])).code).toBe(3);

    expect(proxy!.requests.map((request) => `${request.method} ${request.path.split('?')[0]}`)).toEqual(['GET /locks', 'GET /inspect', 'GET /inspect']);
    expect(new URLSearchParams(proxy!.requests[0]!.path.split('?')[1]).toString()).toBe('namespace=ops-stage&owner=alice');
    expect(new URLSearchParams(proxy!.requests[1]!.path.split('?')[1]).toString()).toBe('namespace=ops-stage&granularity=tree&path=%2Fx%2Fy&mode=exclusive');
    await expectSigned(proxy!);
  });

  it("revoke, signed: recorded as the caller's principal (with --by beside it); the holder loses its lease", async () => {
    const flags = await stage();
    const stuck = await engine.acquire({ namespace: 'ops-stage', granularity: 'document', ids: ['job-9'], owner: 'stuck', ttlMs: 600_000 });
    const run = await ops(['revoke', 'ops-stage/document/job-9', '--reason', 'stuck after a deploy', '--by', 'alice', '--json', ...flags]);
    expect(run.code, run.err).toBe(0);
    const revocation = JSON.parse(run.out);
    expect(revocation).toMatchObject({
      target: { namespace: 'ops-stage', granularity: 'document', ids: ['job-9'] },
      // The principal as the namespace policy matched it: the role (the session name is not kept).
      by: `arn:aws:iam::${ACCOUNT}:role/oncall (as alice)`,
      reason: 'stuck after a deploy',
      revoked: [{ key: 'job-9', owner: 'stuck', leaseId: stuck.leaseId, fencingToken: stuck.fencingToken }],
    });
    expect(BigInt(revocation.fencingToken)).toBeGreaterThan(BigInt(stuck.fencingToken));
    await expect(engine.renew({ leaseToken: stuck.leaseToken })).rejects.toBeInstanceOf(LeaseLostError);
    expect(JSON.parse(proxy!.requests[0]!.body)).toEqual({
      namespace: 'ops-stage',
      granularity: 'document',
      ids: ['job-9'],
      reason: 'stuck after a deploy',
      by: 'alice',
    });
    await expectSigned(proxy!);
  });

  it('drain and status through the stage', async () => {
    const flags = await stage();
    const drained = await ops(['drain', 'ops-stage/global', '--reason', 'maintenance', ...flags]);
    expect(drained).toEqual({ code: 3, out: 'ops-stage/global: nobody was queued; nothing drained', err: '' });
    const status = await ops(['status', '--json', ...flags]);
    expect(status.code, status.err).toBe(0);
    expect(JSON.parse(status.out)).toMatchObject({ index: expect.any(String), epoch: expect.any(Number), shards: { primaries: 1 } });
    expect(proxy!.requests.map((request) => `${request.method} ${request.path}`)).toEqual(['POST /drain', 'GET /status']);
    await expectSigned(proxy!);
  });

  it('refused by the namespace policy (a caller that "*" grants everything but revoke): exit 4, one line', async () => {
    const flags = await stage();
    identity.caller = DASHBOARD;
    const run = await ops(['revoke', 'ops-stage/global', '--reason', 'test', ...flags]);
    expect(run.code).toBe(4);
    expect(run.err).toMatch(/^error: refused: POST \/revoke: AccessDeniedError: [^\n]+$/);
  });

  it('a bad argument the service refuses: exit 2, one line naming the call', async () => {
    const run = await ops(['list', '--granularity', 'bogus', ...(await stage())]);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/^error: GET \/locks: [^\n]*granularity[^\n]*\(see --help\)$/);
  });
});

describe('sweep, the sweeper function invoked directly', () => {
  it('--stage names the function; the report as straight against the cluster', async () => {
    const run = await ops(['sweep', '--stage', 'local', '--lambda-endpoint', stack.details.lambdaUrl, '--region', 'eu-west-1', '--json']);
    expect(run.code, run.err).toBe(0);
    expect(JSON.parse(run.out)).toEqual({
      scanned: expect.any(Number),
      handedOver: expect.any(Number),
      deletedLocks: expect.any(Number),
      prunedHolders: expect.any(Number),
      conflicts: expect.any(Number),
      batches: expect.any(Number),
    });
  });

  it('a function that does not exist: exit 1, one line naming it', async () => {
    const run = await ops([
      'sweep',
      '--sweeper-function',
      'es-lease-locks-nowhere-sweeper',
      '--lambda-endpoint',
      stack.details.lambdaUrl,
      '--region',
      'eu-west-1',
    ]);
    expect(run.code).toBe(1);
    expect(run.err).toMatch(/^error: Invoke es-lease-locks-nowhere-sweeper: ResourceNotFoundException \(404\): [^\n]+$/);
  });
});
