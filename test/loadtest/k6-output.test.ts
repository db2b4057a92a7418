/**
 * Quiet output: what k6 prints goes to k6-<stem>.log in the results folder, on the terminal only with
 * --verbose; a crash (not a threshold miss) prints the end of that log and its path. A stub stands in
 * for k6, and the real binary runs a tiny script when `npm run k6:install` has built it.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseCli } from '../../loadtests/runner/cli.js';
import { defaultConfig } from '../../loadtests/runner/config.js';
import { Interrupt } from '../../loadtests/runner/interrupt.js';
import { cachedK6Path } from '../../loadtests/runner/k6-binary.js';
import { K6_LOG_TAIL_LINES, type K6Run, logTail, runK6 } from '../../loadtests/runner/k6-process.js';
import { runConfig } from '../../loadtests/shared/defaults.js';

/** A k6 stand-in: `lines` lines on stdout, a threshold line on stderr, then exit `code`. */
function stubK6(dir: string, code: number, lines = 3): string {
  const path = join(dir, `k6-stub-${code}.sh`);
  writeFileSync(
    path,
    `#!/bin/sh\nfor i in $(seq 1 ${lines}); do echo "stub summary line $i"; done\necho 'level=error msg="thresholds on metrics have been crossed"' >&2\nexit ${code}\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

const config = defaultConfig();
const k6Config = runConfig({
  runId: 'k6out',
  granularity: 'tree',
  namespace: 'k6out',
  workload: config.workloads[0]!,
  schedule: config.schedule,
  retry: config.retry,
  ttlMs: config.ttlMs,
  objective: config.capacity.objective,
});

/** Runs `k6` with the terminal captured: what reached process.stdout/stderr and what was reported. */
async function run(k6: string, options: { verbose?: boolean; quiet?: boolean; script?: string } = {}) {
  const outDir = mkdtempSync(join(tmpdir(), 'lt-k6out-'));
  let terminal = '';
  const capture = (chunk: string | Uint8Array): boolean => {
    terminal += chunk.toString();
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  const reported: string[] = [];
  let result: K6Run;
  try {
    result = await runK6({
      k6,
      k6Config,
      stem: 'default-tree-probe10',
      baseUrl: 'http://127.0.0.1:9',
      outDir,
      scheduledS: 5,
      interrupt: new Interrupt(),
      report: (line) => reported.push(line),
      ...options,
    });
  } finally {
    vi.restoreAllMocks();
  }
  return { result, terminal, reported, outDir };
}

afterEach(() => vi.restoreAllMocks());

describe('k6 output', () => {
  it('goes to k6-<stem>.log and not to the terminal, a threshold miss included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lt-k6stub-'));
    const { result, terminal, reported, outDir } = await run(stubK6(dir, 99), { quiet: true });
    expect(result.exitCode).toBe(99);
    expect(result.logPath).toBe(join(outDir, 'k6-default-tree-probe10.log'));
    const log = readFileSync(result.logPath, 'utf8');
    expect(log).toContain('stub summary line 1');
    expect(log).toContain('thresholds on metrics have been crossed');
    expect(terminal).toBe('');
    expect(reported).toEqual([]);
  });

  it('comes back to the terminal with --verbose, and still goes to the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lt-k6stub-'));
    const { result, terminal, reported } = await run(stubK6(dir, 0), { verbose: true });
    expect(result.exitCode).toBe(0);
    expect(terminal).toContain('stub summary line 3');
    expect(terminal).toContain('thresholds on metrics have been crossed');
    expect(readFileSync(result.logPath, 'utf8')).toContain('stub summary line 3');
    expect(reported).toEqual([]);
  });

  it('prints the end of the log and its path when k6 crashes (not a threshold miss)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lt-k6stub-'));
    const { result, terminal, reported } = await run(stubK6(dir, 107, 40));
    expect(result.exitCode).toBe(107);
    expect(terminal).toBe('');
    expect(reported[0]).toMatch(/^k6 exited 107 \(script error\); the last 20 line\(s\) of .*k6-default-tree-probe10\.log:$/);
    expect(reported).toHaveLength(1 + K6_LOG_TAIL_LINES);
    expect(reported.at(-1)).toBe('  | level=error msg="thresholds on metrics have been crossed"');
    expect(reported).not.toContain('  | stub summary line 20');
    expect(reported).toContain('  | stub summary line 40');
  });

  it('reads the last lines of a log', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lt-k6tail-'));
    writeFileSync(join(dir, 'a.log'), 'one\ntwo\nthree\n\n');
    writeFileSync(join(dir, 'empty.log'), '');
    expect(logTail(join(dir, 'a.log'), 2)).toEqual(['two', 'three']);
    expect(logTail(join(dir, 'empty.log'))).toEqual([]);
    expect(logTail(join(dir, 'missing.log'))).toEqual([]);
  });

  it('--verbose is a flag of the command line; unknown flags stay usage errors', () => {
    expect(parseCli(['--verbose']).config.verbose).toBe(true);
    expect(parseCli([]).config.verbose).toBeUndefined();
    expect(() => parseCli(['--verbos'])).toThrow(/--verbos/);
  });

  it.skipIf(!existsSync(cachedK6Path()))(
    'keeps the real k6 summary and threshold line in the log',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lt-k6real-'));
      const script = join(dir, 'tiny.js');
      writeFileSync(
        script,
        "import { Counter } from 'k6/metrics';\nconst ticks = new Counter('ticks');\n" +
          "export const options = { iterations: 1, thresholds: { ticks: ['count>5'] } };\nexport default function () { ticks.add(1); }\n",
      );
      const { result, terminal, reported } = await run(cachedK6Path(), { script });
      expect(result.exitCode).toBe(99);
      const log = readFileSync(result.logPath, 'utf8');
      expect(log).toContain("✗ 'count>5' count=1");
      expect(log).toContain("thresholds on metrics 'ticks' have been crossed");
      expect(terminal).toBe('');
      expect(reported).toEqual([]);
    },
    60_000,
  );
});
