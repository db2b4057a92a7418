/**
 * `npm run loadtest -- --target ...` against a stage that wants SigV4: the kit's smoke mode on the
 * local stack behind a proxy that verifies every request's signature as API Gateway would (so an
 * unsigned or wrongly signed request fails the run), and the check before any k6 run failing fast,
 * in one line, when the stage refuses the kit or does not answer.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { deleteLockIndex } from '../../functions/store/index.js';
import { freePort } from '../../infra/lib/free-port.js';
import { ensureK6 } from '../../loadtests/runner/k6-binary.js';
import { K6_ABORTED } from '../../loadtests/runner/k6-process.js';
import { type Stack, startStack } from '../../scripts/stack.js';
import { closeTestClient, testClient } from '../support/engine.js';
import { FakeLockService } from './fake-lock-service.js';
import { ROOT, runLoadtest } from './run.js';
import { type VerifyingProxy, verifyingProxy } from './verifying-proxy.js';

/** Fake static credentials: the default chain reads the environment first. */
const KIT_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'AKIDLOADTESTKIT', AWS_SECRET_ACCESS_KEY: 'secret-of-the-kit-test', AWS_SESSION_TOKEN: 'session-of-the-kit-test' };
const REGION = 'eu-central-1';
const SIGNER = {
  accessKeyId: KIT_CREDENTIALS.AWS_ACCESS_KEY_ID,
  secretAccessKey: KIT_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
  region: REGION,
  service: 'execute-api',
};
/** One granularity, no engine-only layer and no seeded index: the signed path is what is under test. */
const SMOKE = ['--smoke', '--strategies', 'document', '--no-engine', '--no-seed', '--region', REGION];

/** The kit's own lines (not the stack's, not k6's). */
const kitLines = (output: string): string[] => output.split('\n').filter((line) => line.startsWith('[loadtest]') || line.startsWith('error:'));

describe('loadtest --target: every request signed (SigV4, execute-api)', () => {
  const index = `locks-test-loadtest-signed-${randomBytes(4).toString('hex')}`;
  let stack: Stack | undefined;
  let proxy: VerifyingProxy | undefined;

  beforeAll(async () => {
    const apiKey = inject('esApiKey');
    stack = await startStack({
      port: await freePort(),
      lambdaPort: await freePort(),
      env: { ES_URL: inject('esUrl'), ...(apiKey ? { ES_API_KEY: apiKey } : {}), LOCK_INDEX: index },
      inProcess: true,
    });
    proxy = await verifyingProxy(stack.baseUrl, SIGNER);
  }, 240_000);

  afterAll(async () => {
    await proxy?.close();
    await stack?.stop();
    const client = testClient();
    await deleteLockIndex(client, index);
    await closeTestClient(client);
  });

  it('runs the smoke mode through a proxy that recomputes and checks every signature', async () => {
    const results = mkdtempSync(join(tmpdir(), 'lt-signed-'));
    const run = await runLoadtest(['--target', proxy!.url, ...SMOKE], results, KIT_CREDENTIALS);
    expect(run.code, run.output.slice(-6000)).toBe(0);
    expect(proxy!.rejected).toEqual([]);
    // The check before k6, the warm-up, k6's setup and iterations and the probes: all of them signed.
    expect(new Set(proxy!.verified)).toEqual(new Set(['GET /health', 'POST /acquire', 'POST /release']));
    expect(proxy!.verified.length).toBeGreaterThan(50);
    expect(run.output).toContain(`requests signed (SigV4, execute-api, ${REGION})`);
    expect(run.output).toMatch(/safety document\/default: OK/);
  }, 600_000);

  it('fails the run when a signature does not match (the proxy is not fooled)', async () => {
    const results = mkdtempSync(join(tmpdir(), 'lt-badsig-'));
    const started = Date.now();
    const run = await runLoadtest(['--target', proxy!.url, ...SMOKE], results, { ...KIT_CREDENTIALS, AWS_SECRET_ACCESS_KEY: 'not-the-secret' });
    expect(run.code, run.output).toBe(1);
    expect(kitLines(run.output).at(-1)).toMatch(/^error: GET \/health refused with 403: The request signature we calculated does not match/);
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 120_000);
});

describe('loadtest --target: the stage refuses the kit, or does not answer', () => {
  const service = new FakeLockService();
  let proxy: VerifyingProxy | undefined;

  let k6: string | undefined;

  beforeAll(async () => {
    proxy = await verifyingProxy(await service.start(), SIGNER);
    k6 = await ensureK6();
  }, 600_000);

  afterAll(async () => {
    await proxy?.close();
    await service.stop();
  });

  /** Runs the kit against the proxy with `refuse` in place; the refusal must end it at once, before any k6 run. */
  async function refused(refuse: VerifyingProxy['refuse']): Promise<string> {
    proxy!.refuse = refuse;
    const results = mkdtempSync(join(tmpdir(), 'lt-refused-'));
    const started = Date.now();
    const run = await runLoadtest(['--target', proxy!.url, ...SMOKE], results, KIT_CREDENTIALS, 60_000);
    proxy!.refuse = () => undefined;
    expect(run.code, run.output).toBe(1);
    expect(Date.now() - started).toBeLessThan(30_000);
    const errors = run.output.split('\n').filter((line) => line.startsWith('error:'));
    expect(errors, run.output).toHaveLength(1);
    expect(run.output).not.toMatch(/k6 v?\d|stack trace|--verbose/);
    const outDir = run.resultDir;
    expect(outDir && existsSync(outDir) ? readdirSync(outDir).filter((name) => name.startsWith('k6-')) : []).toEqual([]);
    return errors[0]!;
  }

  it("names the missing execute-api:Invoke when API Gateway refuses the kit's role", async () => {
    const resource = `arn:aws:execute-api:${REGION}:123456789012:abc123/$default/GET/health`;
    const line = await refused((route) =>
      route === 'GET /health'
        ? {
            status: 403,
            body: {
              message: `User: arn:aws:sts::123456789012:assumed-role/loadtest-kit/session is not authorized to perform: execute-api:Invoke on resource: ${resource}`,
            },
          }
        : undefined,
    );
    expect(line).toBe(`error: the kit's role (arn:aws:sts::123456789012:assumed-role/loadtest-kit/session) lacks execute-api:Invoke on ${resource}`);
  }, 120_000);

  it('names the namespace policy when the functions refuse the acquire', async () => {
    const line = await refused((route) =>
      route === 'POST /acquire'
        ? {
            status: 403,
            body: {
              error: 'AccessDeniedError',
              message: 'refused',
              reason: 'not_allowed',
              action: 'acquire',
              namespace: 'lt-warmup-x',
              principal: 'arn:aws:iam::123456789012:role/loadtest-kit',
            },
          }
        : undefined,
    );
    expect(line).toMatch(/^error: the namespace policy does not allow arn:aws:iam::123456789012:role\/loadtest-kit to acquire in lt-warmup-x /);
  }, 120_000);

  it("k6's setup() says the same when it meets the refusal (a k6 run by hand, or one the check did not precede)", async () => {
    const resource = `arn:aws:execute-api:${REGION}:123456789012:abc123/$default/GET/health`;
    proxy!.refuse = (route) =>
      route === 'GET /health'
        ? {
            status: 403,
            body: { message: `User: arn:aws:sts::123456789012:assumed-role/k/s is not authorized to perform: execute-api:Invoke on resource: ${resource}` },
          }
        : undefined;
    try {
      const args = [
        'run',
        '--quiet',
        '--no-usage-report',
        '-e',
        `BASE_URL=${proxy!.url}`,
        '-e',
        'RATE=5',
        '-e',
        'DURATION=1',
        join(ROOT, 'loadtests', 'k6', 'locks.ts'),
      ];
      const run = await new Promise<{ code: number | null; output: string }>((resolve) => {
        execFile(k6!, args, { cwd: ROOT, timeout: 60_000, env: { ...process.env, K6_NO_USAGE_REPORT: 'true' } }, (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: `${stdout}${stderr}` }),
        );
      });
      expect(run.code, run.output).toBe(K6_ABORTED);
      expect(run.output).toContain(`the kit's role (arn:aws:sts::123456789012:assumed-role/k/s) lacks execute-api:Invoke on ${resource}`);
    } finally {
      proxy!.refuse = () => undefined;
    }
  }, 120_000);

  it('says in one line that the stage does not answer', async () => {
    const results = mkdtempSync(join(tmpdir(), 'lt-down-'));
    const run = await runLoadtest(['--target', `http://127.0.0.1:${await freePort()}`, ...SMOKE], results, KIT_CREDENTIALS, 60_000);
    expect(run.code, run.output).toBe(1);
    expect(run.output.split('\n').filter((line) => line.startsWith('error:'))).toEqual([
      expect.stringMatching(/^error: GET \/health: cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED$/),
    ]);
  }, 120_000);
});
