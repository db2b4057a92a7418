/**
 * Runs moto's server from the virtualenv as a daemon of its own (its own session, output to its log
 * file), and sets moto up the way the tests rely on it.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { AwsEmulatorError, type LocalEmulator } from './emulator.js';
import { venvPython } from './install.js';

/**
 * What moto's server process is given. MOTO_PORT: moto's Step Functions interpreter reaches the
 * other services (an `sqs:sendMessage` task, an `events:putEvents` task) with boto3 on
 * localhost:MOTO_PORT, 5000 unless told, so it must be the port the server listens on.
 */
export const serverEnv = (emulator: LocalEmulator): Record<string, string> => ({ MOTO_PORT: String(emulator.port) });

/** Starts the server and writes its pid file; returns at once (the caller waits for it to answer). */
export function launchEmulator(emulator: LocalEmulator): number {
  mkdirSync(emulator.nodeDir, { recursive: true });
  const output = openSync(emulator.logFile, 'w');
  try {
    const child = spawn(venvPython(emulator), ['-m', 'moto.server', '--host', '127.0.0.1', '--port', String(emulator.port)], {
      cwd: emulator.nodeDir,
      env: { ...process.env, ...serverEnv(emulator) },
      detached: true,
      stdio: ['ignore', output, output],
    });
    if (child.pid === undefined) throw new AwsEmulatorError(`could not run ${venvPython(emulator)}`);
    child.unref();
    writeFileSync(emulator.pidFile, String(child.pid));
    return child.pid;
  } finally {
    closeSync(output);
  }
}

/** The end of the server's log, for errors. */
export function logTail(emulator: LocalEmulator, lines = 20): string {
  return existsSync(emulator.logFile) ? readFileSync(emulator.logFile, 'utf8').trim().split('\n').slice(-lines).join('\n') : '';
}

/**
 * moto's settings that are not environment variables but live in the server (POST /moto-api/config):
 * Step Functions executions are interpreted (ASL states run, `.waitForTaskToken` waits for
 * SendTaskSuccess/SendTaskFailure) instead of moto's default, which records an execution as
 * succeeded at once and answers canned history (SF_EXECUTION_HISTORY_TYPE). Set before the first
 * Step Functions call: state machines live in the backend that was chosen when they were created.
 */
export const MOTO_CONFIG = { stepfunctions: { execute_state_machine: true } };

export async function configureEmulator(url: string): Promise<void> {
  const response = await fetch(`${url}/moto-api/config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(MOTO_CONFIG),
    signal: AbortSignal.timeout(10_000),
  });
  // moto does not answer this setting back (only Lambda's and Batch's): a 2xx is all there is to check.
  if (!response.ok) throw new AwsEmulatorError(`moto at ${url} refused its configuration (${response.status}): ${(await response.text()).slice(0, 200)}`);
  await response.body?.cancel();
}
