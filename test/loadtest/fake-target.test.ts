/**
 * Faults the real service cannot produce on demand: a lock API that grants conflicting locks (an
 * in-memory fake, reached via --target) must fail the run loudly, and a target that is down must
 * fail it fast. The kit's normal path runs against the real stack in smoke.test.ts.
 * Needs k6: the first run on a machine builds it (about 1-2 minutes).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureK6 } from '../../loadtests/runner/k6-binary.js';
import { FakeLockService } from './fake-lock-service.js';
import { runLoadtest } from './run.js';

describe('load-test kit against faults', () => {
  const unsafe = new FakeLockService({ unsafe: true });
  let unsafeUrl = '';
  const results = mkdtempSync(join(tmpdir(), 'lt-fake-'));

  beforeAll(async () => {
    await ensureK6();
    unsafeUrl = await unsafe.start();
  }, 600_000);

  afterAll(async () => {
    await unsafe.stop();
  });

  it('fails with the violations printed when the service grants conflicting locks', async () => {
    const run = await runLoadtest(
      ['--target', unsafeUrl, '--strategies', 'global', '--rate', '60', '--duration', '3', '--levels', 'none', '--cs-ms', '30', '--no-seed'],
      join(results, 'unsafe'),
    );
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/safety global\/default: VIOLATION/);
    expect(run.output).toMatch(/\[overlap\] conflicting holds overlapped/);
    expect(readFileSync(join(run.resultDir!, 'report.md'), 'utf8')).toContain('VIOLATED');
  }, 600_000);

  it('fails fast when the target is not healthy', async () => {
    const run = await runLoadtest(['--target', 'http://127.0.0.1:9', '--smoke'], join(results, 'down'), {}, 120_000);
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/health answered nothing/);
  }, 600_000);
});
