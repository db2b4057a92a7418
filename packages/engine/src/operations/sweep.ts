/**
 * Sweep: delete expired locks and prune expired holders from shared ones, in bounded batches. Every
 * write is conditioned on the version the search found, so a lock renewed meanwhile is skipped
 * (counted as a conflict). Correctness never waits for it: expired locks are taken over at once.
 */
import { drainNotesLapsed, isLive, replaceOp, settleFences, writtenLock } from '../lock-document.js';
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
    // may have been lost), each after a write that moves its `rewakeAt` on (wakeAgain).
    const rewake = new Set<string>();
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
          if ((lock.body.queue ?? []).some((ticket) => rewakeDue(ticket, now, settings.maxClockSkewMs))) rewake.add(lock.docId);
          const served = handOver(live, lock.body.queue, now, settings, lock.body.permitLimit);
          const unchanged = live.length === lock.body.holders.length && served.reserved.length === 0 && served.dropped.length === 0;
          if (unchanged && !drainNotesLapsed(lock, now, settings)) return [];
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
    if (rewake.size > 0) await wakeAgain(context, [...rewake]);
    if (page.next === undefined) break;
    cursor = page.next;
  }
  // Housekeeping outside the lock index (LockStore.removeStrays): never a reason for the sweep to fail.
  await store.removeStrays?.().catch(() => 0);
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
 * only where a realtime read still shows its reservation due, and after a conditional write on that
 * version moves its `rewakeAt` on by `rewakeAfterMs`: the next sweeps leave it alone until then, and of
 * sweepers racing only the one whose write applied wakes it (a wake-up too many would be harmless, only wasted).
 */
async function wakeAgain(context: EngineContext, docIds: readonly string[]): Promise<void> {
  const current = await context.store.read([...docIds]).catch(() => new Map<string, StoredLock | null>());
  for (const docId of docIds) {
    const lock = current.get(docId);
    if (!lock) continue;
    const written = await postponeRewake(context, lock).catch(() => undefined);
    for (const ticket of written?.due ?? []) await wake(context, written!.lock, ticket).catch(() => undefined);
  }
}

const rewakeDue = (ticket: StoredTicket, now: number, skewMs: number): boolean =>
  ticket.wake !== undefined && ticket.rewakeAt !== undefined && ticket.rewakeAt <= now && reservedFor(ticket, now, skewMs);

/** The write that moves on `rewakeAt` of every reservation due on `lock`: the document it left and those tickets, as written; undefined when none is due or the document changed. */
async function postponeRewake(context: EngineContext, lock: StoredLock): Promise<{ lock: StoredLock; due: StoredTicket[] } | undefined> {
  const { settings } = context;
  let result: { lock: StoredLock; due: StoredTicket[] } | undefined;
  let dueIds: string[] = [];
  await writeUntilSettled(context, settings.contentionBudgetMs, [lock], {
    decide: (pending, now) =>
      pending.flatMap((item) => {
        const queue = item.body.queue ?? [];
        dueIds = queue.filter((ticket) => rewakeDue(ticket, now, settings.maxClockSkewMs)).map((ticket) => ticket.ticket);
        if (dueIds.length === 0) return [];
        const moved = queue.map((ticket) => (dueIds.includes(ticket.ticket) ? { ...ticket, rewakeAt: now + settings.queue.rewakeAfterMs } : ticket));
        const live = settleFences(item).filter((holder) => isLive(holder, now, settings.maxClockSkewMs));
        const op = replaceOp(item, { ...item.body, docId: item.docId }, live, now, settings, item.body.lockedBelow === true, {
          queue: moved,
          nextPosition: item.body.nextPosition ?? 0,
        });
        return [{ item, op }];
      }),
    applied: (_, outcome, op) => {
      if (op.kind === 'delete') return;
      const written = writtenLock(outcome, op.body);
      const due = (op.body.queue ?? []).filter((ticket) => dueIds.includes(ticket.ticket) && ticket.reservedUntil !== undefined);
      result = { lock: written, due };
    },
    // Someone wrote it since the read: a claim, a release, another sweeper; the next sweep looks again.
    reread: async () => [],
    keysOf: (pending) => pending.map((item) => item.body.key),
  });
  return result;
}
