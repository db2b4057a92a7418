/**
 * A seeded scheduler for interleaving tests: every store call and every pause of the engines under
 * test becomes a task, and the scheduler runs one pending task at a time, picked by a seeded random
 * generator, on a virtual clock it advances itself. The same seed replays the same schedule.
 */
import { StoreUnavailableError } from '../../packages/engine/src/errors.js';
import type { LaggingCopy } from '../../packages/engine/src/memory-store.js';
import type { LockStore, StoredLock } from '../../packages/engine/src/store.js';
import { seededRandom } from '../../tools/shared/seeded-random.js';

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

/**
 * Episodes of a lagging copy, as events on the store calls themselves (each is drawn when a call
 * runs, before it is answered): they cost no scheduled step and no pause, so a partition never
 * moves the virtual clock (a long pause would run every lease in flight out at once).
 */
export interface CopyEpisodes {
  /** Per call while the copy is in step: the chance that it falls behind. */
  start: number;
  /** Per call while it lags: the chance that it heals (catches up in full). */
  heal: number;
  /**
   * The share of episodes in which the copy trails the primary by 1 to `trailing` writes of each
   * document (it shows the state just before the latest writes: an attempt's holder just before its
   * rollback, a lease just before its renewal); in the others it is cut off (a partition: it keeps
   * the state the primary had then).
   */
  trailingShare: number;
  trailing: number;
  /** Per call while cut off: the chance that it catches up to 1 to `trailing` writes behind. */
  catchUp: number;
}

export interface StoreFaults {
  /** A write (or write-then-read) that applied, but whose answer was lost: the caller gets an ambiguous error. */
  lostAnswers: number;
  /** A call that fails before it reaches the store. */
  unavailable: number;
  /**
   * A plain `read` or `findLiveBelow` answered by the store's lagging copy (LaggingCopy) instead of
   * the primary, as the contract allows: it makes a difference only while the copy lags (see
   * `copyEpisodes`). `readPrimary`, the writes and `writeThenRead`'s reads never are.
   */
  staleReads?: number;
  /** When the copy falls behind and catches up again; without it, the copy is left to the caller. */
  copyEpisodes?: CopyEpisodes;
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
 * that lags behind the primary (`copyEpisodes`). No random number is drawn for a fault that is
 * off, so a schedule without stale reads is the same as before they existed.
 */
export function scheduledStore(store: LockStore & Partial<LaggingCopy>, scheduler: Scheduler, faults: StoreFaults): LockStore {
  const fail = (operation: string): StoreUnavailableError => new StoreUnavailableError({ operation }, `${operation}: connection refused (scheduled)`);
  const staleRate = faults.staleReads ?? 0;
  if (staleRate > 0 && !(store.readFromCopy && store.findLiveBelowOnCopy)) throw new Error('staleReads needs a store with a lagging copy');
  // Drawn only when the copy lags: the other stale answers would be the primary's anyway.
  const stale = (): boolean => staleRate > 0 && (store.copyLag ?? 0) > 0 && scheduler.chance(staleRate);
  const episodes = faults.copyEpisodes;
  let lagging: 'trailing' | 'cut off' | undefined;
  const writesBehind = (): number => 1 + Math.floor(scheduler.random() * episodes!.trailing);
  /** The copy's event, if any, at the start of a call. */
  const copyEvent = (): void => {
    if (!episodes || !store.lagBehind || !store.catchUp) return;
    if (!lagging) {
      if (!scheduler.chance(episodes.start)) return;
      const trailing = scheduler.chance(episodes.trailingShare) ? writesBehind() : undefined;
      store.lagBehind(trailing);
      lagging = trailing ? 'trailing' : 'cut off';
      scheduler.note(trailing ? `the copy trails by ${trailing} writes per document` : 'the copy is cut off');
    } else if (scheduler.chance(episodes.heal)) {
      store.catchUp();
      lagging = undefined;
      scheduler.note('the copy heals');
    } else if (lagging === 'cut off' && scheduler.chance(episodes.catchUp)) {
      const behind = writesBehind();
      store.catchUp(Math.max(0, store.copyLag! - behind));
      // Caught up in full, it follows the primary again.
      if (store.copyLag === 0) lagging = undefined;
      scheduler.note(`the copy catches up to ${behind} writes behind`);
    }
  };
  const task = <T>(label: string, fn: () => Promise<T>): Promise<T> =>
    scheduler.schedule(label, async () => {
      copyEvent();
      return fn();
    });
  return {
    read: (ids) => {
      const asker = scheduler.actor?.();
      return task(`read ${ids.join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('read');
        if (!stale()) return store.read(ids);
        scheduler.note(`answered by the copy, ${store.copyLag} writes behind`);
        const seen = await store.readFromCopy!(ids);
        faults.onStaleAnswer?.({ kind: 'read', seen, primary: await store.read(ids), asker });
        return seen;
      });
    },
    readPrimary: (ids) =>
      task(`readPrimary ${ids.join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('primary read');
        return store.readPrimary(ids);
      }),
    write: (ops) =>
      task(`write ${ops.map((op) => `${op.kind}:${op.docId}`).join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('write');
        const outcomes = await store.write(ops);
        if (scheduler.chance(faults.lostAnswers)) throw new StoreUnavailableError({ operation: 'write', ambiguous: true }, 'write: answer lost (scheduled)');
        return outcomes;
      }),
    writeThenRead: (ops, ids) =>
      task(`write ${ops.map((op) => `${op.kind}:${op.docId}`).join(' ')} then read ${ids.join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('write');
        const result = await store.writeThenRead(ops, ids);
        if (scheduler.chance(faults.lostAnswers)) throw new StoreUnavailableError({ operation: 'write', ambiguous: true }, 'write: answer lost (scheduled)');
        return result;
      }),
    findExpired: (before, size, after) => task('findExpired', () => store.findExpired(before, size, after)),
    list: (query) => task('list', () => store.list(query)),
    findLiveBelow: (query) => {
      const asker = scheduler.actor?.();
      return task(`findLiveBelow ${query.path}`, async () => {
        if (!stale()) return store.findLiveBelow(query);
        scheduler.note(`answered by the copy, ${store.copyLag} writes behind`);
        const found = await store.findLiveBelowOnCopy!(query);
        faults.onStaleAnswer?.({ kind: 'search', seen: new Map([[query.selfDocId, found.self]]), primary: await store.read([query.selfDocId]), asker });
        return found;
      });
    },
  };
}
