/**
 * Faults the real service cannot produce on demand: a lock API that grants conflicting locks (an
 * in-memory fake, reached via --target) must fail the run loudly, and a target that is down must
 * fail it fast. The kit's normal path runs against the real stack in smoke.test.ts.
 * Needs k6: the first run on a machine builds it (about 1-2 minutes).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureK6 } from '../../loadtests/runner/k6-binary.js';
import { K6_THRESHOLDS_FAILED } from '../../loadtests/runner/k6-process.js';
import { normalizeK6Summary } from '../../loadtests/runner/summary.js';
import { FakeLockService } from './fake-lock-service.js';
import { ROOT, runLoadtest } from './run.js';

describe('load-test kit against faults', () => {
  const unsafe = new FakeLockService({ unsafe: true });
  /** Every acquire takes 120 ms or more: beyond an objective of 100 ms, within one of 1000 ms. */
  const slow = new FakeLockService({ delayMs: 120 });
  let unsafeUrl = '';
  let slowUrl = '';
  let k6 = '';
  const results = mkdtempSync(join(tmpdir(), 'lt-fake-'));

  beforeAll(async () => {
    k6 = await ensureK6();
    unsafeUrl = await unsafe.start();
    slowUrl = await slow.start();
  }, 600_000);

  afterAll(async () => {
    await unsafe.stop();
    await slow.stop();
  });

  it('a k6 run started by hand carries the objective as thresholds and fails on it the way the kit judges', async () => {
    // Not spawnSync: the fake service answers from this process.
    const byHand = async (sloP99: number) => {
      const summaryPath = join(results, `by-hand-${sloP99}.json`);
      const args = ['run', '--quiet', '--no-usage-report', '-e', `BASE_URL=${slowUrl}`, '-e', 'STRATEGY=document', '-e', 'RATE=10', '-e', 'DURATION=2'];
      args.push('-e', `SLO_P99=${sloP99}`, '-e', `SUMMARY_PATH=${summaryPath}`, join(ROOT, 'loadtests', 'k6', 'locks.ts'));
      const run = await new Promise<{ code: number | null; output: string }>((resolve) => {
        execFile(k6, args, { cwd: ROOT, timeout: 120_000, env: { ...process.env, K6_NO_USAGE_REPORT: 'true' } }, (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: `${stdout}${stderr}` }),
        );
      });
      return { ...run, summary: normalizeK6Summary(JSON.parse(readFileSync(summaryPath, 'utf8'))) };
    };
    const missed = await byHand(100);
    expect(missed.code, missed.output).toBe(K6_THRESHOLDS_FAILED);
    expect(missed.summary.metrics['acquire_latency{stage:steady}']?.thresholds).toEqual({ 'p(99)<=100': { ok: false } });
    // Every operation completed: only the latency objective failed.
    expect(missed.summary.metrics['goodput{stage:steady}']?.thresholds).toEqual({ 'count>=19': { ok: true } });
    expect(missed.summary.metrics.errors?.thresholds).toEqual({ 'rate<0.01': { ok: true } });
    const met = await byHand(1000);
    expect(met.code, met.output).toBe(0);
    expect(met.summary.metrics['acquire_latency{stage:steady}']?.thresholds).toEqual({ 'p(99)<=1000': { ok: true } });
  }, 300_000);

  it('reports a missed objective at the expected rate without failing the run (the rate is beyond the capacity, a finding)', async () => {
    const run = await runLoadtest(
      [
        '--target',
        slowUrl,
        '--no-sign',
        '--strategies',
        'document',
        '--trials',
        '1',
        '--rate',
        '10',
        '--duration',
        '2',
        '--levels',
        'none',
        '--no-seed',
        '--no-search',
        '--slo-p99',
        '100',
      ],
      join(results, 'missed'),
    );
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/missed the objective at the expected rate \(k6 thresholds acquire_latency\{stage:steady\}: p\(99\)<=100\)/);
    expect(run.output).not.toMatch(/k6 exited 99/);
    // The expected-rate run: one line of the kit's own, carrying its figures, safety, dashboard, finding and warm-up.
    const runLines = run.output
      .split('\n')
      .filter((line) => line.startsWith('[loadtest]') && /\[document\] steady|safety document|warm-up|dashboard|missed the objective/.test(line));
    expect(runLines, run.output).toHaveLength(1);
    expect(runLines[0]).toMatch(
      /^\[loadtest\] \[1\/1\] \[document\] steady 10\/s for 2s: goodput \d+ of \d+ offered, .*; safety document\/default: OK, \d+ critical sections; dashboard k6-dashboard-default-document\.html; missed the objective at the expected rate .*; warm-up \d+ round/,
    );
    expect(readFileSync(join(run.resultDir!, 'report.md'), 'utf8')).toContain(
      '- document: missed the objective at the expected rate (k6 thresholds acquire_latency{stage:steady}: p(99)<=100)',
    );
  }, 600_000);

  it('fails with the violations printed when the service grants conflicting locks', async () => {
    const run = await runLoadtest(
      ['--target', unsafeUrl, '--no-sign', '--strategies', 'global', '--rate', '60', '--duration', '3', '--levels', 'none', '--cs-ms', '30', '--no-seed'],
      join(results, 'unsafe'),
    );
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/safety global\/default: VIOLATION/);
    expect(run.output).toMatch(/\[overlap\] conflicting holds overlapped/);
    expect(readFileSync(join(run.resultDir!, 'report.md'), 'utf8')).toContain('VIOLATED');
  }, 600_000);

  it('fails fast when the target is not healthy', async () => {
    const run = await runLoadtest(['--target', 'http://127.0.0.1:9', '--no-sign', '--smoke'], join(results, 'down'), {}, 120_000);
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/health answered nothing/);
  }, 600_000);
});
