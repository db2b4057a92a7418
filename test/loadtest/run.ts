/** Runs loadtests/runner/commands/loadtest.ts in a child process (asynchronously, so an in-process fake service keeps serving). */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface LoadtestRun {
  code: number | null;
  output: string;
  /** The results/<timestamp>/ folder the run wrote, if any. */
  resultDir: string | undefined;
}

export function runLoadtest(args: string[], resultsBase: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 600_000): Promise<LoadtestRun> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(
      join(ROOT, 'node_modules', '.bin', 'tsx'),
      [join(ROOT, 'loadtests', 'runner', 'commands', 'loadtest.ts'), ...args, '--results', resultsBase],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGINT'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const dirs = existsSync(resultsBase) ? readdirSync(resultsBase).sort() : [];
      const last = dirs[dirs.length - 1];
      resolveRun({ code, output, resultDir: last ? join(resultsBase, last) : undefined });
    });
  });
}
