/**
 * The package as people install it: `npm pack` in packages/client (its prepack builds dist/), the
 * tarball installed into a copy of examples/client-example (`npm install <tarball>`, served by the
 * npm cache that the root install filled), the example type-checked against the published types
 * and run on Node.js 24 against the local stack: its Lambda handler takes a lock with using(), over
 * signed HTTP and by invoking the lock functions, and leaves nothing held.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/stack.js';
import { clientStack } from './support/client-stack.js';

const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'client-tarball-'));
const app = join(work, 'app');
let tarball = '';

async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } }).catch(
    (error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`npm ${args.join(' ')} failed in ${cwd}:\n${error.stdout ?? ''}\n${error.stderr ?? error.message}`);
    },
  );
  return stdout;
}

/** Packs the package and installs the tarball into a fresh copy of the example (while the stack starts). */
async function installFromTarball(): Promise<void> {
  const [packed] = JSON.parse(await npm(['pack', '--json', '--pack-destination', work], join(ROOT, 'packages/client'))) as Array<{ filename: string }>;
  tarball = join(work, packed!.filename);
  cpSync(join(ROOT, 'examples/client-example'), app, { recursive: true });
  await npm(['install', tarball, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], app);
}

const stack = clientStack('tarball', installFromTarball);
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function runExample(env: Record<string, string>): Promise<{ orderId: string; fencingToken: string; renewed: number; holdersAfter: number }> {
  const { stdout } = await run(process.execPath, ['run.ts'], { cwd: app, env: { ...process.env, ...env } });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

describe('the package installed from its tarball', () => {
  it('ships dist/ with types and the wire contract, and nothing of the service', () => {
    const installed = join(app, 'node_modules/@es-lease-locks/client');
    // A copy from the tarball, not a link to the workspace.
    expect(realpathSync(installed).startsWith(realpathSync(app))).toBe(true);
    for (const file of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/wire.js',
      'dist/wire.d.ts',
      'dist/testing.js',
      'dist/testing/index.d.ts',
      'README.md',
      'LICENSE',
    ])
      expect(existsSync(join(installed, file)), file).toBe(true);
    expect(existsSync(join(installed, 'src'))).toBe(false);
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    expect(Object.keys(manifest.exports)).toEqual(['.', './wire', './testing', './package.json']);
    // The testing entry carries the engine bundled: nothing of the service is imported at run time.
    expect(readFileSync(join(installed, 'dist/testing.js'), 'utf8')).not.toMatch(/from\s*["'](@es-lease-locks\/engine|zod)/);
    expect(JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')).dependencies['@es-lease-locks/client']).toMatch(/^file:.*\.tgz$/);
  });

  it('type-checks the example against the published types', async () => {
    await run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: app }).catch(
      (error: { stdout?: string; message: string }) => {
        throw new Error(`tsc failed:\n${error.stdout ?? error.message}`);
      },
    );
  });

  it('runs the testing entry with no cluster: the engine bundled, its errors the classes of the main entry', async () => {
    const script = `
      import { LockClient, LockHeldError } from '@es-lease-locks/client';
      import { testLocks } from '@es-lease-locks/client/testing';
      const locks = testLocks();
      const client = new LockClient({ transport: locks.locker, settings: { retry: { retries: 0 } } });
      const target = { namespace: 'installed', granularity: 'document', ids: ['a'] };
      const lock = await client.acquire({ ...target, owner: 'alice' });
      const refused = await client.acquire({ ...target, owner: 'bob' }).catch((error) => error);
      await lock.release();
      console.log(JSON.stringify({ fencingToken: lock.fencingToken, heldError: refused instanceof LockHeldError }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app });
    expect(JSON.parse(stdout.trim())).toEqual({ fencingToken: expect.stringMatching(/^\d+$/), heldError: true });
  });

  it("runs the example's handler over signed HTTP and by invoking the lock functions: a lock taken, renewed, released", async () => {
    const [http, invoke] = await Promise.all([
      runExample({ LOCKS_URL: stack.details.baseUrl }),
      runExample({ LOCKS_FUNCTION_PREFIX: stack.details.functionName(''), LOCKS_LAMBDA_ENDPOINT: stack.details.lambdaUrl }),
    ]);
    for (const result of [http, invoke]) {
      expect(result.fencingToken).toMatch(/^\d+$/);
      // A 3 s lease over 3.5 s of work, renewed every third of it: at least twice, with 1.5 s of room for each renewal under load.
      expect(result.renewed).toBeGreaterThanOrEqual(2);
      expect(result.holdersAfter).toBe(0);
    }
    expect(http.orderId).not.toBe(invoke.orderId);
  });
});
