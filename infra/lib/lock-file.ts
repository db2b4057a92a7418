/**
 * One holder at a time for a lock file that names its holder's pid: starting a local server, filling
 * a cache folder. A lock whose holder has died is taken over, so a killed run never blocks the next.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { pidAlive } from './stop-process.js';
import { waitUntil } from './wait.js';

/** Takes the lock file (holding our pid), or clears it when its holder has died; false while a live process holds it. */
function tryTake(lockFile: string): boolean {
  try {
    writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const holder = Number(readFileSync(lockFile, 'utf8').trim());
  if (Number.isInteger(holder) && holder > 0 && pidAlive(holder)) return false;
  rmSync(lockFile, { force: true });
  return tryTake(lockFile);
}

export interface LockFileOptions {
  /** How long to wait while another live process holds it. */
  timeoutMs: number;
  /** The error thrown when the wait is over; `detail` reads "for over 300 s (<lock file>)". */
  timedOut: (detail: string) => Error;
}

/** Runs `work` holding `lockFile` (its folder is created); waits while another live process holds it. */
export async function withLockFile<T>(lockFile: string, options: LockFileOptions, work: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(lockFile), { recursive: true });
  const outcome = await waitUntil(() => tryTake(lockFile) || 'another process holds it', { timeoutMs: options.timeoutMs, intervalMs: 500 });
  if (!outcome.ready) throw options.timedOut(`for over ${options.timeoutMs / 1000} s (${lockFile})`);
  try {
    return await work();
  } finally {
    rmSync(lockFile, { force: true });
  }
}
