/**
 * Sweep: delete expired locks and prune expired holders from shared ones, in bounded batches. Every
 * write is conditioned on the version the search found, so a lock renewed meanwhile is skipped
 * (counted as a conflict). Correctness never waits for it: expired locks are taken over at once.
 */
import { isLive, replaceOp, settleFences } from '../lock-document.js';
import type { StoredTicket, SweepReport } from '../model.js';
import { handOver, reservedFor } from '../queue.js';
import type { StoredLock, WriteOp } from '../store.js';
import { claimLocksToCheck, sweepWorkOp, workEndsAt } from '../work.js';
import { writeUntilSettled } from '../write-loop.js';
import type { EngineContext } from './context.js';
import { wake } from './wake-waiters.js';

const deleteOp = (lock: StoredLock): WriteOp => ({
  kind: 'delete',
  docId: lock.docId,
  ifSeqNo: lock.seqNo,
  ifPrimaryTerm: lock.primaryTerm,
  index: lock.index,
});

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
    // Channel waiters the lock has been reserved for a while without a claim are woken again (a wake-up
    // may have been lost); no write: a reservation that lapses is dropped by the next write, this one's included.
    const rewake: Array<{ lock: StoredLock; ticket: StoredTicket }> = [];
    const claimLocks = await readClaimLocks(context, page.locks);
    await writeUntilSettled(context, settings.contentionBudgetMs, page.locks, {
      decide: (pending, now) =>
        pending.flatMap((lock): Array<{ item: StoredLock; op: WriteOp }> => {
          // A work document: deleted once its outcome (or its claim's lease, renewals included) has ended, never before.
          if (lock.body.work) {
            const op = sweepWorkOp(lock, claimLocks, now, settings.maxClockSkewMs);
            return op ? [{ item: lock, op }] : [];
          }
          // An operator's audit record: deleted once its retention has passed.
          if (lock.body.revocation) return lock.body.revocation.keepUntil <= now ? [{ item: lock, op: deleteOp(lock) }] : [];
          const settled = settleFences(lock);
          const live = settled.filter((holder) => isLive(holder, now, settings.maxClockSkewMs));
          for (const ticket of lock.body.queue ?? []) {
            if (ticket.wake && ticket.rewakeAt !== undefined && ticket.rewakeAt <= now && reservedFor(ticket, now, settings.maxClockSkewMs))
              rewake.push({ lock, ticket });
          }
          const served = handOver(live, lock.body.queue, now, settings, lock.body.permitLimit);
          if (live.length === lock.body.holders.length && served.reserved.length === 0 && served.dropped.length === 0) return [];
          pruned.set(lock.docId, lock.body.holders.length - live.length);
          return [{ item: lock, op: replaceOp(lock, { ...lock.body, docId: lock.docId }, live, now, settings) }];
        }),
      applied: (lock, _, op) => {
        report.prunedHolders += pruned.get(lock.docId) ?? 0;
        report.handedOver += op.queueEffects?.reserved.length ?? 0;
        if (op.kind === 'delete') report.deletedLocks++;
      },
      // Someone changed it since the search: it is alive, or the next run sees it again.
      reread: async (changed) => {
        report.conflicts += changed.length;
        return [];
      },
      keysOf: (pending) => pending.map((lock) => lock.body.key),
    });
    if (rewake.length > 0) await wakeAgain(context, rewake);
    if (page.next === undefined) break;
    cursor = page.next;
  }
  return report;
}

/**
 * The lock documents of the claims that look ended, read on the primary: a lease renewed since its
 * claim keeps it (sweepWorkOp).
 */
async function readClaimLocks(context: EngineContext, locks: readonly StoredLock[]): Promise<Map<string, StoredLock | null>> {
  const { settings, store } = context;
  const due = locks.filter((lock) => lock.body.work && workEndsAt(lock.body.work) + settings.maxClockSkewMs <= settings.now());
  const docIds = [...new Set(due.flatMap((lock) => claimLocksToCheck(lock.body.work!)))];
  if (docIds.length === 0) return new Map();
  return store.readPrimary(docIds);
}

/**
 * The search sees the index as its last refresh left it: a waiter may have claimed since. Woken again
 * only where a realtime read still shows its reservation (a wake-up too many would be harmless, only wasted).
 */
async function wakeAgain(context: EngineContext, candidates: Array<{ lock: StoredLock; ticket: StoredTicket }>): Promise<void> {
  const { settings, store } = context;
  const current = await store.read([...new Set(candidates.map(({ lock }) => lock.docId))]).catch(() => new Map<string, StoredLock | null>());
  for (const { lock } of candidates) {
    const now = current.get(lock.docId);
    for (const ticket of now?.body.queue ?? []) {
      if (
        now &&
        ticket.wake &&
        ticket.rewakeAt !== undefined &&
        ticket.rewakeAt <= settings.now() &&
        reservedFor(ticket, settings.now(), settings.maxClockSkewMs)
      ) {
        await wake(context, now, ticket).catch(() => undefined);
      }
    }
    current.delete(lock.docId);
  }
}
