/** The lock index as an operator's `status` sees it: counts and the oldest live lease, from one scan (about a second behind). */
import { isLive } from '../lock-document.js';
import type { LockIndexStatus } from '../model.js';
import type { StoredLock } from '../store.js';
import type { EngineContext } from './context.js';

export async function status(context: EngineContext): Promise<LockIndexStatus> {
  if (!context.store.describe) throw new Error('this lock store cannot describe the lock index');
  const { documents, complete, ...facts } = await context.store.describe();
  const now = context.settings.now();
  const counts = new StatusCounts(now, context.settings.maxClockSkewMs);
  for (const lock of documents) counts.add(lock);
  return { ...facts, ...counts.totals(), scanned: documents.length, complete, at: now };
}

class StatusCounts {
  private locks = 0;
  private holders = 0;
  private waiters = 0;
  private workRecords = 0;
  private auditRecords = 0;
  private oldest: LockIndexStatus['oldestLease'] = null;

  constructor(
    private readonly now: number,
    private readonly skewMs: number,
  ) {}

  add(lock: StoredLock): void {
    const { body } = lock;
    if (body.revocation) this.auditRecords++;
    else if (body.work) this.workRecords++;
    this.waiters += body.queue?.length ?? 0;
    const live = body.holders.filter((holder) => isLive(holder, this.now, this.skewMs));
    if (live.length === 0) return;
    this.locks++;
    this.holders += live.length;
    for (const holder of live) {
      if (this.oldest && this.oldest.grantedAt <= holder.grantedAt) continue;
      this.oldest = {
        namespace: body.namespace,
        granularity: body.granularity,
        key: body.key,
        owner: holder.owner,
        grantedAt: holder.grantedAt,
        expiresAt: holder.expiresAt,
      };
    }
  }

  totals() {
    const { locks, holders, waiters, workRecords, auditRecords, oldest } = this;
    return { locks, holders, waiters, workRecords, auditRecords, oldestLease: oldest };
  }
}
