/**
 * The whole kit (k6 script, orchestrator, checker, report) against an in-memory fake of the lock
 * API via --target: a correct fake passes, one that grants conflicting locks fails loudly.
 * Needs k6: the first run on a machine builds it (about 1-2 minutes).
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureK6 } from '../../scripts/k6.js';
import { FakeLockService } from './fake-lock-service.js';
import { runLoadtest } from './run.js';

describe('load-test kit against a fake lock service', () => {
  const safe = new FakeLockService();
  const unsafe = new FakeLockService({ unsafe: true });
  let safeUrl = '';
  let unsafeUrl = '';
  const results = mkdtempSync(join(tmpdir(), 'lt-fake-'));

  beforeAll(async () => {
    await ensureK6();
    safeUrl = await safe.start();
    unsafeUrl = await unsafe.start();
  }, 600_000);

  afterAll(async () => {
    await safe.stop();
    await unsafe.stop();
  });

  it('runs all three strategies, passes the safety check and writes the report', async () => {
    const run = await runLoadtest(['--target', safeUrl, '--smoke', '--duration', '2', '--levels', '10,20', '--step', '1', '--no-seed'], join(results, 'safe'));
    expect(run.code, run.output).toBe(0);
    expect(run.resultDir).toBeDefined();
    const report = readFileSync(join(run.resultDir!, 'report.md'), 'utf8');
    for (const strategy of ['global', 'document', 'tree']) {
      expect(report).toContain(`| ${strategy} |`);
      expect(existsSync(join(run.resultDir!, `summary-default-${strategy}.json`))).toBe(true);
      expect(run.output).toMatch(new RegExp(`safety ${strategy}/default: OK`));
    }
    expect(existsSync(join(run.resultDir!, 'goodput.svg'))).toBe(true);
    expect(readFileSync(join(run.resultDir!, 'report.html'), 'utf8')).toContain('<svg');
    expect(run.output).toMatch(/recommendation: (global|document|tree): /);
    expect(safe.stats.acquired).toBeGreaterThan(50);
    expect(safe.stats.released).toBe(safe.stats.acquired);
  }, 600_000);

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
