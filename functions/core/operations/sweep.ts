/**
 * Sweep: delete expired locks and prune expired holders from shared ones, in bounded batches. Every
 * write is conditioned on the version the search found, so a lock renewed meanwhile is skipped
 * (counted as a conflict). Correctness never waits for it: expired locks are taken over at once.
 */
import { isLive, replaceOp, settleFences } from '../lock-document.js';
import type { SweepReport } from '../model.js';
import { handOver } from '../queue.js';
import type { StoredLock, WriteOp } from '../store.js';
import { writeUntilSettled } from '../write-loop.js';
import type { EngineContext } from './context.js';
import { redeliver } from './hand-over.js';

export async function sweep(context: EngineContext, options: { batchSize?: number; maxBatches?: number } = {}): Promise<SweepReport> {
  const { settings, store } = context;
  const batchSize = options.batchSize ?? settings.sweep.batchSize;
  const maxBatches = options.maxBatches ?? settings.sweep.maxBatches;
  const report: SweepReport = { scanned: 0, handedOver: 0, deletedLocks: 0, prunedHolders: 0, conflicts: 0, batches: 0 };
  let cursor: unknown;
  while (report.batches < maxBatches) {
    const page = await store.findExpired(settings.now() - settings.maxClockSkewMs, batchSize, cursor);
    if (page.locks.length === 0) break;
    report.batches++;
    report.scanned += page.locks.length;
    const pruned = new Map<string, number>();
    // Grants handed over from the queue whose waiter has not heard yet are told again (those that ran out
    // are told they were lost by the write that prunes them: replaceOp notes them, tellWaiters tells them).
    const retell: Array<{ lock: StoredLock; leaseId: string }> = [];
    await writeUntilSettled(context, settings.contentionBudgetMs, page.locks, {
      decide: (pending, now) =>
        pending.flatMap((lock): Array<{ item: StoredLock; op: WriteOp }> => {
          const settled = settleFences(lock);
          const live = settled.filter((holder) => isLive(holder, now, settings.maxClockSkewMs));
          for (const holder of live) {
            if (holder.delivery !== undefined && holder.grantedAt + settings.queue.redeliverAfterMs <= now) retell.push({ lock, leaseId: holder.lease });
          }
          const served = handOver(live, lock.body.queue, now, settings.maxClockSkewMs);
          if (live.length === lock.body.holders.length && served.granted.length === 0 && served.dropped.length === 0) return [];
          pruned.set(lock.docId, lock.body.holders.length - live.length);
          return [{ item: lock, op: replaceOp(lock, { ...lock.body, docId: lock.docId }, live, now, settings.maxClockSkewMs) }];
        }),
      applied: (lock, _, op) => {
        report.prunedHolders += pruned.get(lock.docId) ?? 0;
        report.handedOver += op.queueEffects?.granted.length ?? 0;
        if (op.kind === 'delete') report.deletedLocks++;
      },
      // Someone changed it since the search: it is alive, or the next run sees it again.
      reread: async (changed) => {
        report.conflicts += changed.length;
        return [];
      },
      keysOf: (pending) => pending.map((lock) => lock.body.key),
    });
    for (const { lock, leaseId } of retell) await redeliver(context, lock, leaseId).catch(() => undefined);
    if (page.next === undefined) break;
    cursor = page.next;
  }
  return report;
}
