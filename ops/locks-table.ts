/** Locks as rows: one per holder, with its mode, expiry (relative), fencing token and the lock's queue length. */
import type { LockView } from './backend.js';
import { relative, table } from './render.js';

const mode = (holder: LockView['holders'][number], permitLimit: number | undefined): string =>
  holder.permits !== undefined && permitLimit !== undefined ? `${holder.mode} ${holder.permits}/${permitLimit} permits` : holder.mode;

export function locksTable(locks: LockView[], now: number): string {
  const rows = locks.flatMap((lock) =>
    lock.holders.map((holder) => [
      lock.namespace,
      lock.granularity,
      lock.key,
      holder.owner,
      mode(holder, lock.permitLimit),
      holder.expired ? `expired ${relative(holder.expiresAtMs, now)}` : relative(holder.expiresAtMs, now),
      holder.fencingToken,
      lock.waiters === undefined ? '?' : String(lock.waiters),
    ]),
  );
  return table(['NAMESPACE', 'GRANULARITY', 'KEY', 'OWNER', 'MODE', 'EXPIRES', 'FENCING TOKEN', 'QUEUED'], rows);
}
