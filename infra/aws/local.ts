/**
 * Starting and stopping the project's own emulator: install once, one start at a time per port,
 * a running one reused, stopped by its pid file.
 */

import { portAnswers } from '../es/probe.js';
import { withLockFile } from '../lib/lock-file.js';
import { pidAlive, pidProcess, stopProcess } from '../lib/stop-process.js';
import { waitUntil } from '../lib/wait.js';
import { AwsEmulatorError, EMULATOR_PORT_ENV, EMULATOR_URL_ENV, type LocalEmulator, localEmulator } from './emulator.js';
import { ensureInstalled } from './install.js';
import { configureEmulator, launchEmulator, logTail } from './launch.js';
import { emulatorPid, isRunning, motoAnswers } from './probe.js';

export interface StartOptions {
  port?: number;
  log?: (line: string) => void;
}

/** Starts the emulator unless this project's already runs on the port; returns whether this call started it. */
export async function startEmulator(options: StartOptions = {}): Promise<{ emulator: LocalEmulator; started: boolean }> {
  const emulator = localEmulator(options.port);
  const log = options.log ?? ((line: string) => console.error(`[aws] ${line}`));
  const reuse = async () => {
    await configureEmulator(emulator.url);
    return { emulator, started: false };
  };
  if (await isRunning(emulator)) return reuse();
  return withLockFile(
    `${emulator.nodeDir}/start.lock`,
    { timeoutMs: 900_000, timedOut: (detail) => new AwsEmulatorError(`the AWS emulator on ${emulator.url}: another process is starting it ${detail}`) },
    async () => {
      // Whoever held the lock before us may have started it.
      if (await isRunning(emulator)) return reuse();
      if (await portAnswers(emulator.port)) {
        throw new AwsEmulatorError(
          `Port ${emulator.port} is taken by something that is not this project's AWS emulator. ` +
            `Stop it, choose another port with ${EMULATOR_PORT_ENV}, or point ${EMULATOR_URL_ENV} at it if it is an emulator you want to use.`,
        );
      }
      await ensureInstalled(emulator, log);
      log(`starting moto ${emulator.version} on ${emulator.url}`);
      const pid = launchEmulator(emulator);
      const outcome = await waitUntil(() => motoAnswers(emulator.url), {
        timeoutMs: 60_000,
        intervalMs: 200,
        abandonIf: () => (pidAlive(pid) ? undefined : 'its process exited'),
      });
      if (!outcome.ready) {
        await stopProcess(pidProcess(pid), { graceMs: 5_000, killWaitMs: 5_000 });
        throw new AwsEmulatorError(`moto at ${emulator.url} did not come up: ${outcome.reason}.\nLast log lines (${emulator.logFile}):\n${logTail(emulator)}`);
      }
      await configureEmulator(emulator.url);
      log(`ready on ${emulator.url}; logs in ${emulator.logFile}`);
      return { emulator, started: true };
    },
  );
}

/** Stops the emulator this project started on the port (by its pid file); false when none was running. */
export async function stopEmulator(options: { port?: number } = {}): Promise<boolean> {
  const pid = emulatorPid(localEmulator(options.port));
  if (!pid) return false;
  await stopProcess(pidProcess(pid), { graceMs: 10_000, killWaitMs: 5_000 });
  return true;
}
