/**
 * A seeded scheduler for interleaving tests: every store call and every pause of the engines under
 * test becomes a task, and the scheduler runs one pending task at a time, picked by a seeded random
 * generator, on a virtual clock it advances itself. The same seed replays the same schedule.
 */
import { StoreUnavailableError } from '../../functions/core/errors.js';
import type { LockStore } from '../../functions/core/store.js';

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
  private pending: Task[] = [];

  constructor(readonly seed: number) {
    this.random = seededRandom(seed);
  }

  /** Runs `fn` when the scheduler picks this task. */
  schedule<T>(label: string, fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ label, run: () => void fn().then(resolve, reject) });
    });
  }

  sleep = (ms: number): Promise<void> => {
    const wakeAt = this.now + ms;
    return this.schedule(`sleep ${Math.round(ms)}`, async () => {
      this.now = Math.max(this.now, wakeAt);
    });
  };

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
      this.trace.push(`${this.now} ${task!.label}`);
      if (this.trace.length > 60) this.trace.shift();
      task!.run();
    }
    throw new Error(`seed ${this.seed}: still running after ${maxSteps} steps`);
  }
}

/**
 * A store whose every call is a scheduled task, applied atomically to the store underneath when
 * picked. `lostAnswers` is the fault a real node will not produce on demand: a write that applied
 * but whose answer never came back.
 */
export function scheduledStore(store: LockStore, scheduler: Scheduler, faults: { lostAnswers: number; unavailable: number }): LockStore {
  const fail = (operation: string): StoreUnavailableError => new StoreUnavailableError(`${operation}: connection refused (scheduled)`, { operation });
  return {
    read: (ids) =>
      scheduler.schedule(`read ${ids.join(' ')}`, async () => {
        if (scheduler.chance(faults.unavailable)) throw fail('read');
        return store.read(ids);
      }),
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
    findLiveBelow: (query) => scheduler.schedule(`findLiveBelow ${query.path}`, () => store.findLiveBelow(query)),
  };
}
