/**
 * serverless-offline as a child process: started in its own process group (so stopping it also
 * stops the workers it spawns), its output split into lines, the last ones kept for error messages.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { stopProcess } from '../../infra/lib/stop-process.js';
import { ROOT } from '../lib/root.js';

const OSLS_BIN = join(ROOT, 'node_modules', 'osls', 'bin', 'serverless.js');
const TAIL_LINES = 80;

export interface OfflineOptions {
  port: number;
  lambdaPort: number;
  /** The functions' environment. */
  env: Record<string, string>;
  watch?: boolean;
  inProcess?: boolean;
  onLine?: (line: string) => void;
}

export interface Offline {
  /** Why the process is no longer running, or undefined while it runs. */
  exitReason(): string | undefined;
  /** The last lines it printed. */
  tail(): string;
  stop(): Promise<void>;
}

export function startOffline(options: OfflineOptions): Offline {
  // Each stack bundles into its own folder, so that two stacks (tests, dev, a load test) never share one.
  const workFolder = `.esbuild/stack-${options.port}`;
  const args = [
    'offline',
    'start',
    '--stage',
    'local',
    // Keep warm instances for the whole run: idle ones would otherwise be stopped after 60 s.
    '--terminateIdleLambdaTime',
    '3600',
    ...(options.inProcess ? ['--useInProcess'] : []),
  ];
  const child = spawn(process.execPath, [OSLS_BIN, ...args], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ...options.env,
      OFFLINE_HTTP_PORT: String(options.port),
      OFFLINE_LAMBDA_PORT: String(options.lambdaPort),
      SLS_ESBUILD_WORK_FOLDER: workFolder,
      ...(options.watch ? {} : { SLS_ESBUILD_WATCH_PATTERN: '.no-watch/none' }),
      SLS_TELEMETRY_DISABLED: '1',
      SLS_NOTIFICATIONS_MODE: 'off',
      FORCE_COLOR: '0',
    },
  });
  let exitReason: string | undefined;
  child.once('exit', (code, signal) => (exitReason = `code ${code}, signal ${signal}`));
  child.once('error', (error) => (exitReason ??= error.message));
  const tail: string[] = [];
  const remember = (line: string): void => {
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
    options.onLine?.(line);
  };
  for (const stream of [child.stdout, child.stderr]) forEachLine(stream, remember);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await stopProcess({ signal: (signal) => killGroup(child, signal), isGone: () => exitReason !== undefined }, { graceMs: 5_000, killWaitMs: 2_000 });
      rmSync(join(ROOT, workFolder), { recursive: true, force: true });
    })());
  return { exitReason: () => exitReason, tail: () => tail.join('\n'), stop };
}

function forEachLine(stream: Readable | null, onLine: (line: string) => void): void {
  let pending = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) onLine(line.replace(/\r$/, ''));
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}
