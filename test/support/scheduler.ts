/**
 * A seeded scheduler for interleaving tests: every store call and every pause of the engines under
 * test becomes a task, and the scheduler runs one pending task at a time, picked by a seeded random
 * generator, on a virtual clock it advances itself. The same seed replays the same schedule.
 */
import { StoreUnavailableError } from '../../functions/core/errors.js';
import type { LockStore, StoredLock } from '../../functions/core/store.js';
import type { LaggingCopy } from './memory-store.js';

/** mulberry32: small, fast, good enough to pick schedules. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Task {
  label: string;
  run: () => void;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class Scheduler {
  readonly random: () => number;
  /** Virtual milliseconds. */
  now = 1_000_000;
  readonly trace: string[] = [];
  /** How many of the last steps the trace keeps (a replay of one seed may want them all). */
  traceLength = 60;
  /**
   * Names whoever schedules a task, for the trace: called when the task is scheduled, in the
   * caller's async context (the interleaving tests answer from an AsyncLocalStorage).
   */
  actor?: () => string | undefined;
  private pending: Task[] = [];

  constructor(readonly seed: number) {
    this.random = seededRandom(seed);
  }

  /** Runs `fn` when the scheduler picks this task. */
  schedule<T>(label: string, fn: () => Promise<T>): Promise<T> {
    const actor = this.actor?.();
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ label: actor ? `${actor}: ${label}` : label, run: () => void fn().then(resolve, reject) });
    });
  }

  sleep = (ms: number): Promise<void> => {
    const wakeAt = this.now + ms;
    return this.schedule(`sleep ${Math.round(ms)}`, async () => {
      this.now = Math.max(this.now, wakeAt);
    });
  };

  /** A line in the trace under the step that is running (what it chose, where that matters to read a failure). */
  note(text: string): void {
    this.record(`  ${text}`);
  }

  private record(line: string): void {
    this.trace.push(line);
    if (this.trace.length > this.traceLength) this.trace.shift();
  }

  chance = (probability: number): boolean => this.random() < probability;
  pick = <T>(items: readonly T[]): T => items[Math.floor(this.random() * items.length)]!;

  /** Runs tasks until `work` settles. Throws if it waits on something no task will bring. */
  async run<T>(work: Promise<T>, maxSteps = 100_000): Promise<T> {
    let settled = false;
    const result = work.finally(() => {
      settled = true;
    });
    for (let step = 0; step < maxSteps; step++) {
      await turn();
      if (settled) return result;
      if (this.pending.length === 0) {
        await turn();
        if (settled) return result;
        if (this.pending.length === 0) throw new Error(`seed ${this.seed}: stuck with nothing scheduled`);
      }
      const [task] = this.pending.splice(Math.floor(this.random() * this.pending.length), 1);
      this.now += Math.floor(this.random() * 15);
      this.record(`${this.now} ${task!.label}`);
      task!.run();
    }
    throw new Error(`seed ${this.seed}: still running after ${maxSteps} steps`);
  }
}

export interface StaleAnswer {
  kind: 'read' | 'search';
  seen: Map<string, StoredLock | null>;
  primary: Map<string, StoredLock | null>;
  asker: string | undefined;
}

export interface StoreFaults {
  /** A write (or write-then-read) that applied, but whose answer was lost: the caller gets an ambiguous error. */
  lostAnswers: number;
  /** A call that fails before it reaches the store. */
  unavailable: number;
  /**
   * A plain `read` or `findLiveBelow` answered by the store's lagging copy (LaggingCopy) instead of
   * the primary, as the contract allows: it makes a difference only while the copy lags (see
   * `partitions`). `readPrimary`, the writes and `writeThenRead`'s reads never are.
   */
  staleReads?: number;
  /**
   * Told each time the lagging copy answered while it lagged: a plain read (what it showed of the
   * documents read) or a search below (what it showed of the caller's own document, `self`), next to
   * what the primary had then, and who asked (the scheduler's `actor` when the call was sent).
   */
  onStaleAnswer?: (answer: StaleAnswer) => void;
}

/**
 * A store whose every call is a scheduled task, applied atomically to the store underneath when
 * picked. `lostAnswers` is the fault a real node will not produce on demand: a write that applied
 * but whose answer never came back; `staleReads` another: a chosen plain read answered by a copy
 * that lags behind the primary. No random number is drawn for a fault whose rate is 0, so a
 * schedule without stale reads is the same as before they existed.
 */
export function scheduledStore(store: LockStore & Partial<LaggingCopy>, scheduler: Scheduler, faults: StoreFaults): LockStore {
  const fail = (operation: string): StoreUnavailableError => new StoreUnavailableError(`${operation}: connection refused (scheduled)`, { operation });
  const staleRate = faults.staleReads ?? 0;
  if (staleRate > 0 && !(store.readFromCopy && store.findLiveBelowOnCopy)) throw new Error('staleReads needs a store with a lagging copy');
  // Drawn only when the copy lags: the other stale answers would be the primary's anyway.
  const stale = (): boolean => staleRate > 0 && (store.copyLag ?? 0) > 0 && scheduler.chance(staleRate);
  return {
    read: (ids) => {
      const asker = scheduler.actor?.();
      return scheduler.schedule(`read ${ids.join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('read');
        if (!stale()) return store.read(ids);
        scheduler.note(`answered by the copy, ${store.copyLag} writes behind`);
        const seen = await store.readFromCopy!(ids);
        faults.onStaleAnswer?.({ kind: 'read', seen, primary: await store.read(ids), asker });
        return seen;
      });
    },
    readPrimary: (ids) =>
      scheduler.schedule(`readPrimary ${ids.join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('primary read');
        return store.readPrimary(ids);
      }),
    write: (ops) =>
      scheduler.schedule(`write ${ops.map((op) => `${op.kind}:${op.docId}`).join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('write');
        const outcomes = await store.write(ops);
        if (scheduler.chance(faults.lostAnswers)) throw new StoreUnavailableError('write: answer lost (scheduled)', { operation: 'write', ambiguous: true });
        return outcomes;
      }),
    writeThenRead: (ops, ids) =>
      scheduler.schedule(`write ${ops.map((op) => `${op.kind}:${op.docId}`).join(' ')} then read ${ids.join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('write');
        const result = await store.writeThenRead(ops, ids);
        if (scheduler.chance(faults.lostAnswers)) throw new StoreUnavailableError('write: answer lost (scheduled)', { operation: 'write', ambiguous: true });
        return result;
      }),
    findExpired: (before, size, after) => scheduler.schedule('findExpired', () => store.findExpired(before, size, after)),
    list: (query) => scheduler.schedule('list', () => store.list(query)),
    findLiveBelow: (query) => {
      const asker = scheduler.actor?.();
      return scheduler.schedule(`findLiveBelow ${query.path}`, async () => {
        if (!stale()) return store.findLiveBelow(query);
        scheduler.note(`answered by the copy, ${store.copyLag} writes behind`);
        const found = await store.findLiveBelowOnCopy!(query);
        faults.onStaleAnswer?.({ kind: 'search', seen: new Map([[query.selfDocId, found.self]]), primary: await store.read([query.selfDocId]), asker });
        return found;
      });
    },
  };
}

/**
 * Episodes of a lagging copy over a schedule, one after the other, until `stop()` says the work is
 * done. In a share of `trailingShare` of them the copy trails the primary by 1 to `trailing` writes
 * of each document (it shows the state just before the latest writes: an attempt's holder just
 * before its rollback, a lease just before its renewal); in the others it is cut off at a random
 * moment (a partition: it keeps the state the primary had then) and now and then catches up to a
 * few writes behind. Each episode ends with the copy healed (caught up). Meanwhile `staleReads`
 * lets it answer plain reads. Each event is a scheduled step.
 */
export async function partitions(
  scheduler: Scheduler,
  copy: LaggingCopy,
  options: { gapMs: number; lengthMs: number; catchUpEveryMs: number; trailing: number; trailingShare: number; stop: () => boolean },
): Promise<void> {
  const writesBehind = (): number => 1 + Math.floor(scheduler.random() * options.trailing);
  while (!options.stop()) {
    await scheduler.sleep(scheduler.random() * options.gapMs);
    const trailing = scheduler.chance(options.trailingShare) ? writesBehind() : undefined;
    await scheduler.schedule(trailing ? `copy trails by ${trailing} writes` : 'copy cut off', async () => copy.lagBehind(trailing));
    const healAt = scheduler.now + scheduler.random() * options.lengthMs;
    while (scheduler.now < healAt && !options.stop()) {
      await scheduler.sleep(scheduler.random() * (trailing ? options.lengthMs : options.catchUpEveryMs));
      if (trailing) continue;
      const behind = writesBehind();
      await scheduler.schedule(`copy catches up to ${behind} writes behind`, async () => copy.catchUp(Math.max(0, copy.copyLag - behind)));
    }
    await scheduler.schedule('copy heals', async () => copy.catchUp());
  }
}
