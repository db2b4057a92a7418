/**
 * Runs many commands' argument checks in one Node process, for test/infra/cli-errors.test.ts: a Node
 * and tsx start per case cost about a second of CPU each, and there are some seventy cases. Each case
 * imports its script afresh (a query string makes a new instance of the script's module; what the
 * script imports is loaded once) with the case's argv and environment, and records what it printed
 * and the code it exited with. Only `process.exit` and the two output streams are taken over:
 * everything up to the exit is the command's own code. Usage: command-batch.ts <cases.json> <outcomes.json>.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface BatchCase {
  script: string;
  args: string[];
  /** The whole environment the command runs with. */
  env: Record<string, string>;
}

export interface BatchOutcome {
  /** The code given to process.exit; null when the command did not exit within the case's time. */
  code: number | null;
  stdout: string;
  stderr: string;
}

const CASE_TIMEOUT_MS = 20_000;

const original = {
  exit: process.exit,
  stdoutWrite: process.stdout.write,
  stderrWrite: process.stderr.write,
};

function useEnvironment(env: Record<string, string>): void {
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, env);
}

async function runCase(entry: BatchCase, index: number, root: string): Promise<BatchOutcome> {
  const outcome: BatchOutcome = { code: null, stdout: '', stderr: '' };
  const listenersBefore = new Set<unknown>([...process.listeners('uncaughtException'), ...process.listeners('unhandledRejection')]);
  let exited!: () => void;
  const exit = new Promise<void>((resolve) => (exited = resolve));
  useEnvironment(entry.env);
  process.argv = [process.execPath, join(root, entry.script), ...entry.args];
  process.exit = ((code?: number) => {
    outcome.code ??= typeof code === 'number' ? code : 0;
    exited();
  }) as typeof process.exit;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    outcome.stdout += String(chunk);
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    outcome.stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  let timer: NodeJS.Timeout | undefined;
  try {
    await import(`${pathToFileURL(join(root, entry.script)).href}?case=${index}`);
    await Promise.race([exit, new Promise<void>((resolve) => (timer = setTimeout(resolve, CASE_TIMEOUT_MS)))]);
  } catch (error) {
    outcome.stderr += `the batch could not load ${entry.script}: ${(error as Error).stack}`;
  } finally {
    clearTimeout(timer);
    process.exit = original.exit;
    process.stdout.write = original.stdoutWrite;
    process.stderr.write = original.stderrWrite;
    // runCli's handlers for failures, added by this case's script.
    for (const listener of process.listeners('uncaughtException')) if (!listenersBefore.has(listener)) process.off('uncaughtException', listener);
    for (const listener of process.listeners('unhandledRejection')) if (!listenersBefore.has(listener)) process.off('unhandledRejection', listener);
  }
  return outcome;
}

async function main(): Promise<void> {
  const [casesFile, outcomesFile] = process.argv.slice(2);
  const root = process.cwd();
  const cases = JSON.parse(readFileSync(casesFile!, 'utf8')) as BatchCase[];
  const outcomes: BatchOutcome[] = [];
  for (const [index, entry] of cases.entries()) outcomes.push(await runCase(entry, index, root));
  writeFileSync(outcomesFile!, JSON.stringify(outcomes));
  original.exit(0);
}

await main();
