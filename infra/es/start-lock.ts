/**
 * One start at a time per node folder. Test runs, scripts and tools resolve the same local node in
 * parallel; two launches on one folder make the second server die on the data lock after it has
 * overwritten the pid file, leaving the live server without one (no stop, no status).
 */
import { join } from 'node:path';
import { withLockFile } from '../lib/lock-file.js';
import { LocalEsError, type LocalNode } from './node.js';

/** Runs `start` holding the node's start lock; waits (up to `timeoutMs`) while another process starts it. */
export function withStartLock<T>(node: LocalNode, start: () => Promise<T>, timeoutMs = 300_000): Promise<T> {
  return withLockFile(
    join(node.nodeDir, 'start.lock'),
    {
      timeoutMs,
      timedOut: (detail) => new LocalEsError(`${node.distribution.product} on ${node.url}: another process is starting it ${detail}`),
    },
    start,
  );
}
