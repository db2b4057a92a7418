/**
 * One start at a time per node folder. Test runs, scripts and tools resolve the same local node in
 * parallel; two launches on one folder make the second server die on the data lock after it has
 * overwritten the pid file, leaving the live server without one (no stop, no status).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive } from '../lib/stop-process.js';
import { waitUntil } from '../lib/wait.js';
import { LocalEsError, type LocalNode } from './node.js';

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

/** Runs `start` holding the node's start lock; waits (up to `timeoutMs`) while another process starts it. */
export async function withStartLock<T>(node: LocalNode, start: () => Promise<T>, timeoutMs = 300_000): Promise<T> {
  mkdirSync(node.nodeDir, { recursive: true });
  const lockFile = join(node.nodeDir, 'start.lock');
  const outcome = await waitUntil(() => tryTake(lockFile) || 'another process is starting it', { timeoutMs, intervalMs: 500 });
  if (!outcome.ready) throw new LocalEsError(`${node.distribution.product} on ${node.url}: ${outcome.reason} for over ${timeoutMs / 1000} s (${lockFile})`);
  try {
    return await start();
  } finally {
    rmSync(lockFile, { force: true });
  }
}
