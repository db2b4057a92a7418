/**
 * One k6 run as a child process: its summary and hold log go to files, a watchdog stops it if it
 * overruns. Everything k6 itself prints (its end-of-test summary, threshold and warning lines) goes
 * to k6-<stem>.log beside them, and to the terminal only with `verbose`; a run that ends in a crash
 * or a setup failure prints the end of that log. A run that is not quiet also writes k6's own
 * end-of-test summary and, when asked, saves k6's web dashboard as an HTML report.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stopProcess } from '../../infra/lib/stop-process.js';
import { ROOT } from '../../scripts/lib/root.js';
import type { K6RunConfig } from '../shared/workload.js';
import type { Interrupt } from './interrupt.js';
import { warn } from './log.js';

const K6_SCRIPT = join(ROOT, 'loadtests', 'k6', 'locks.ts');
/** k6 needs a moment to start and to write its summary beyond the scheduled time. */
const K6_OVERHEAD_S = 90;
/** After SIGINT, how long k6 gets to write its summary before it is killed. */
const K6_SUMMARY_GRACE_MS = 15_000;

const K6_EXIT: Record<number, string> = {
  99: 'thresholds failed',
  105: 'k6 was interrupted',
  107: 'script error',
  108: 'test aborted (setup health check failed?)',
};
/** The code k6 exits with when a threshold failed. */
export const K6_THRESHOLDS_FAILED = 99;
/** The code k6 exits with when its setup() aborts the test (our health check). */
export const K6_ABORTED = 108;

export interface K6Run {
  exitCode: number | null;
  summaryPath: string;
  holdsPath: string;
  /** What k6 printed on stdout and stderr. */
  logPath: string;
  /** k6's web dashboard export, when one was asked for and k6 wrote it (it skips runs of under two periods). */
  dashboardPath?: string;
}

/**
 * The environment of k6's built-in web dashboard: off, or on with its HTML report exported to
 * `exportPath` when the run ends. It serves on a free port of the loopback interface while the test
 * runs (port 0: runs never clash; the export needs no server, but port -1 would listen on every
 * interface in k6 v1.8), and never opens a browser. The period puts about 60 points on the charts,
 * at least 1 s apart (the export needs two periods of data).
 */
export function dashboardEnv(exportPath: string | undefined, scheduledS: number): Record<string, string> {
  if (!exportPath) return { K6_WEB_DASHBOARD: 'false' };
  const periodS = Math.min(10, Math.max(1, Math.round(scheduledS / 60)));
  return {
    K6_WEB_DASHBOARD: 'true',
    K6_WEB_DASHBOARD_EXPORT: exportPath,
    K6_WEB_DASHBOARD_OPEN: 'false',
    K6_WEB_DASHBOARD_HOST: '127.0.0.1',
    K6_WEB_DASHBOARD_PORT: '0',
    K6_WEB_DASHBOARD_PERIOD: `${periodS}s`,
  };
}

/** Lines of a k6 log printed when the run crashed or its setup failed. */
export const K6_LOG_TAIL_LINES = 20;

/** The last `count` lines of a k6 log (none when it is missing). */
export function logTail(path: string, count = K6_LOG_TAIL_LINES): string[] {
  if (!existsSync(path)) return [];
  const lines = readFileSync(path, 'utf8').replace(/\s+$/, '').split('\n');
  return lines[0] === '' && lines.length === 1 ? [] : lines.slice(-count);
}

/** "k6 exited 99 (thresholds failed)". */
export function describeK6Exit(code: number | null): string {
  return `k6 exited ${code}${code !== null && K6_EXIT[code] ? ` (${K6_EXIT[code]})` : ''}`;
}

export function runK6(args: {
  k6: string;
  k6Config: K6RunConfig;
  stem: string;
  baseUrl: string;
  /** What is tested when baseUrl is the signing proxy in front of it (k6's setup names it in a refusal). */
  targetUrl?: string;
  outDir: string;
  scheduledS: number;
  interrupt: Interrupt;
  /**
   * No progress bar and no console output (capacity probes: many short runs); the summary JSON is
   * then written by locks.ts's handleSummary (SUMMARY_PATH) instead of k6's own summary and export.
   */
  quiet?: boolean;
  /** Export k6's web dashboard to outDir/k6-dashboard-<stem>.html. */
  dashboard?: boolean;
  /** Print k6's own output on the terminal too (--verbose), with its progress bar unless quiet. */
  verbose?: boolean;
  /** Where the end of a crashed run's log is printed (tests); the terminal by default. */
  report?: (line: string) => void;
  /** The k6 script (tests); loadtests/k6/locks.ts by default. */
  script?: string;
}): Promise<K6Run> {
  const summaryPath = join(args.outDir, `summary-${args.stem}.json`);
  const holdsPath = join(args.outDir, `holds-${args.stem}.log`);
  const logPath = join(args.outDir, `k6-${args.stem}.log`);
  const report = args.report ?? warn;
  const dashboardPath = args.dashboard ? join(args.outDir, `k6-dashboard-${args.stem}.html`) : undefined;
  const argv = [
    'run',
    '--address',
    '',
    '--no-usage-report',
    `--console-output=${holdsPath}`,
    '-e',
    `LT_CONFIG=${JSON.stringify(args.k6Config)}`,
    '-e',
    `BASE_URL=${args.baseUrl}`,
    '-e',
    `TARGET_URL=${args.targetUrl ?? args.baseUrl}`,
    // Quiet: our JSON and one line from handleSummary. Otherwise k6 prints its own end-of-test summary
    // (into the log) and exports its JSON (handleSummary returns nothing without SUMMARY_PATH).
    ...(args.quiet ? ['-e', `SUMMARY_PATH=${summaryPath}`] : ['-e', 'SUMMARY_PATH=', `--summary-export=${summaryPath}`]),
    // No progress bar in a log file (nor on the terminal for probes).
    ...(args.quiet || !args.verbose ? ['--quiet'] : []),
    args.script ?? K6_SCRIPT,
  ];
  const budgetMs = (args.scheduledS + K6_OVERHEAD_S) * 1000;
  // Quiet: k6 writes straight into its log. Verbose: its output is copied to the terminal as well.
  const logFd = openSync(logPath, 'w');
  return new Promise((resolveRun, reject) => {
    const child = spawn(args.k6, argv, {
      cwd: ROOT,
      stdio: ['ignore', args.verbose ? 'pipe' : logFd, args.verbose ? 'pipe' : logFd],
      env: { ...process.env, K6_NO_USAGE_REPORT: 'true', ...dashboardEnv(dashboardPath, args.scheduledS) },
    });
    const tee = (terminal: NodeJS.WriteStream) => (chunk: Buffer) => {
      writeSync(logFd, chunk);
      terminal.write(chunk);
    };
    child.stdout?.on('data', tee(process.stdout));
    child.stderr?.on('data', tee(process.stderr));
    const streamsClosed = new Promise<void>((resolveClosed) => child.once('close', () => resolveClosed()));
    let exited = false;
    args.interrupt.child = child;
    const watchdog = setTimeout(() => {
      warn(`k6 ran past ${budgetMs / 1000} s; stopping it`);
      void stopProcess({ signal: (signal) => child.kill(signal), isGone: () => exited }, { first: 'SIGINT', graceMs: K6_SUMMARY_GRACE_MS });
    }, budgetMs);
    child.once('error', (error) => {
      clearTimeout(watchdog);
      closeSync(logFd);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      exited = true;
      clearTimeout(watchdog);
      args.interrupt.child = undefined;
      const exitCode = code ?? (signal ? 128 : null);
      // The piped output (verbose) is complete once the streams close.
      void streamsClosed.then(() => {
        closeSync(logFd);
        if (exitCode !== 0 && exitCode !== K6_THRESHOLDS_FAILED && !args.interrupt.interrupted) {
          const shown = relative(process.cwd(), logPath) || logPath;
          if (args.verbose) report(`${describeK6Exit(exitCode)}; its output is in ${shown}`);
          else {
            const tail = logTail(logPath);
            report(`${describeK6Exit(exitCode)}; the last ${tail.length} line(s) of ${shown}:`);
            for (const line of tail) report(`  | ${line}`);
          }
        }
        resolveRun({
          exitCode,
          summaryPath,
          holdsPath,
          logPath,
          ...(dashboardPath && existsSync(dashboardPath) ? { dashboardPath } : {}),
        });
      });
    });
  });
}
