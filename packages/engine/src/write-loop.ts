/**
 * The one loop every change goes through: decide conditional writes for what is pending, send them
 * in one request, and for each that did not apply because its document changed meanwhile, read it
 * again and decide anew, until nothing is pending or the contention budget is spent. Acquire, renew,
 * release (and rollback) and sweep differ only in what they decide and how they read again.
 */
import { LockContentionError, StoreUnavailableError } from './errors.js';
import { writtenLock } from './lock-document.js';
import type { LockSettings } from './settings.js';
import type { LockStore, QueueEffects, StoredLock, WriteOp, WriteOutcome } from './store.js';

export type Applied = Extract<WriteOutcome, { ok: true }>;

export interface WritePlan<T> {
  /** The writes for the pending items; items that need none are finished (or have failed) and drop out. May throw to stop. */
  decide(pending: readonly T[], now: number): Array<{ item: T; op: WriteOp }> | Promise<Array<{ item: T; op: WriteOp }>>;
  /** One write applied. */
  applied(item: T, outcome: Applied, op: WriteOp): void;
  /** Items whose document changed under their write, read again for the next round (return [] to give them up). */
  reread(items: T[]): Promise<T[]>;
  /**
   * The request's answer was lost: its writes may or may not have applied. Find out and return what
   * is still pending; without it, the loss is thrown to the caller.
   */
  resolveLost?(items: T[], lost: StoreUnavailableError): Promise<T[]>;
  /** The keys to name when the budget runs out. */
  keysOf(items: readonly T[]): string[];
  /**
   * Documents to read from the primary in the same request, after the writes (tree locks read their
   * ancestors so). `readAlong` gets what a round read when its answer arrived.
   */
  alsoRead?: readonly string[];
  readAlong?(read: Map<string, StoredLock | null>): void;
}

export interface LoopContext {
  store: LockStore;
  settings: Readonly<LockSettings>;
  /**
   * Writes that served a lock's queue (granted waiters, dropped tickets) are reported here once the
   * loop ends, for those waiters to be told (operations/wake-waiters.ts). Not awaited by a failure.
   */
  tellWaiters?: (written: Array<{ lock: StoredLock | null; effects: QueueEffects }>) => Promise<void>;
}

/**
 * Jittered exponential pause between rounds (up to 1, 2, 4 ... 128 ms): N writers racing on one
 * document need about N rounds, and spreading them out wastes fewer round trips than hammering.
 */
export const contentionPause = (settings: Readonly<LockSettings>, round: number): Promise<void> => settings.sleep(Math.random() * Math.min(128, 2 ** round));

/**
 * Runs `plan` to completion. Only contention spends `budgetMs`: a round that resolves a lost answer
 * does not. One lost answer is resolved; a second is thrown. Throws the first item that failed on
 * its own (after the others of its request were recorded), or LockContentionError.
 */
export async function writeUntilSettled<T>(context: LoopContext, budgetMs: number, initial: readonly T[], plan: WritePlan<T>): Promise<void> {
  const served: Array<{ lock: StoredLock | null; effects: QueueEffects }> = [];
  try {
    await settle(context, budgetMs, initial, plan, served);
  } finally {
    // Waiters served by a write that applied hear of it even when the call failed later.
    if (served.length > 0 && context.tellWaiters) await context.tellWaiters(served).catch(() => undefined);
  }
}

/** Notes what an applied write did to a lock's queue, for its waiters to be told once the loop ends. */
function noteServed(served: Array<{ lock: StoredLock | null; effects: QueueEffects }>, outcome: Applied, op: WriteOp): void {
  if (!op.queueEffects) return;
  served.push({ lock: op.kind === 'delete' ? null : writtenLock(outcome, op.body), effects: op.queueEffects });
}

async function settle<T>(
  context: LoopContext,
  budgetMs: number,
  initial: readonly T[],
  plan: WritePlan<T>,
  served: Array<{ lock: StoredLock | null; effects: QueueEffects }>,
): Promise<void> {
  const { store, settings } = context;
  const giveUpAt = settings.now() + budgetMs;
  let pending: readonly T[] = initial;
  let contended = false;
  let lostAnswers = 0;
  for (let round = 0; pending.length > 0; round++) {
    if (contended && settings.now() > giveUpAt) throw new LockContentionError({ keys: plan.keysOf(pending), rounds: round });
    const writes = await plan.decide(pending, settings.now());
    if (writes.length === 0) return;
    const { outcomes, lost, failure, read } = await writeAll(
      store,
      writes.map((write) => write.op),
      plan.alsoRead,
    );
    if (read) plan.readAlong?.(read);
    const notApplied: T[] = [];
    outcomes.forEach((outcome, index) => {
      const { item, op } = writes[index]!;
      if (outcome.ok) {
        noteServed(served, outcome, op);
        plan.applied(item, outcome, op);
      } else notApplied.push(item);
    });
    if (lost) {
      if (!plan.resolveLost) throw lost;
      // Resolved even when it is the last straw: the caller must know what it holds to give it back.
      pending = await plan.resolveLost(notApplied, lost);
      if (++lostAnswers > 1) throw lost;
      contended = false;
      continue;
    }
    if (failure) throw failure;
    contended = notApplied.length > 0;
    if (contended) await contentionPause(settings, round);
    pending = contended ? await plan.reread(notApplied) : [];
  }
}

// Not a closure in writeAll: the bundle names every named closure as it is made (esbuild keepNames), about 0.3 µs each.
const noneApplied = (ops: readonly WriteOp[]): WriteOutcome[] => ops.map((op) => ({ ok: false, docId: op.docId, reason: 'conflict' }));

/** One request; item failures and a lost answer come back as values, so that what did apply is recorded first. */
async function writeAll(
  store: LockStore,
  ops: WriteOp[],
  alsoRead: readonly string[] = [],
): Promise<{ outcomes: WriteOutcome[]; lost?: StoreUnavailableError; failure?: Error; read?: Map<string, StoredLock | null> }> {
  let outcomes: WriteOutcome[];
  let read: Map<string, StoredLock | null> | undefined;
  try {
    if (alsoRead.length > 0) ({ outcomes, read } = await store.writeThenRead(ops, alsoRead));
    else outcomes = await store.write(ops);
  } catch (error) {
    if (error instanceof StoreUnavailableError && error.context.ambiguous) return { outcomes: noneApplied(ops), lost: error };
    // Not sent, or refused as a whole: none of it applied.
    return { outcomes: noneApplied(ops), failure: error as Error };
  }
  let lost: StoreUnavailableError | undefined;
  let failure: Error | undefined;
  for (const outcome of outcomes) {
    if (outcome.ok || outcome.reason !== 'error') continue;
    if (outcome.error instanceof StoreUnavailableError && outcome.error.context.ambiguous) lost ??= outcome.error;
    else failure ??= outcome.error;
  }
  return { outcomes, ...(lost ? { lost } : {}), ...(failure ? { failure } : {}), ...(read ? { read } : {}) };
}
