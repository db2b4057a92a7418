/**
 * Locks started at a fixed rate, whether or not earlier ones have finished (an open loop): the latency
 * a caller sees at a given load. Closed-loop workers would slow down with the server and hide it.
 */
import { sleep } from '../../infra/lib/wait.js';
import type { Lock } from './workers.js';

export interface OpenLoopOutcome {
  /** Cycles the schedule asked for. */
  scheduled: number;
  /** Of those, not started because `maxInFlight` cycles were still running: the row cannot keep up with the rate. */
  skipped: number;
  /** Cycles whose acquire or release threw; the first error's message. */
  failed: number;
  firstError?: string;
  /** Each acquire call's duration, from its start to its answer, in ms. */
  acquireMs: number[];
  /** How late each cycle started against its schedule, in ms: the client's own lag, which the acquire times leave out. */
  lateMs: number[];
}

/**
 * Worker numbers for cycles that overlap: a cycle takes a number no running cycle has, and the next
 * iteration of that number, so that the rows' keys (`${worker}-${iteration % 50}`) never collide, as with workers.
 */
class WorkerNumbers {
  private readonly free: number[] = [];
  private readonly iterations: number[] = [];

  take(): { worker: number; iteration: number } {
    const worker = this.free.pop() ?? this.iterations.length;
    const iteration = this.iterations[worker] ?? 0;
    this.iterations[worker] = iteration + 1;
    return { worker, iteration };
  }

  give(worker: number): void {
    this.free.push(worker);
  }
}

/** Starts `lock`'s cycles `ratePerSecond` times a second for `seconds`, then waits for the last to end. */
export async function runAtFixedRate(lock: Lock, ratePerSecond: number, seconds: number, maxInFlight: number): Promise<OpenLoopOutcome> {
  const outcome: OpenLoopOutcome = { scheduled: Math.max(1, Math.round(ratePerSecond * seconds)), skipped: 0, failed: 0, acquireMs: [], lateMs: [] };
  const numbers = new WorkerNumbers();
  const running = new Set<Promise<void>>();
  const intervalMs = 1_000 / ratePerSecond;
  const start = performance.now();
  for (let next = 0; next < outcome.scheduled; ) {
    // A timer fires a millisecond or so late: every cycle due by now starts at once.
    for (; next < outcome.scheduled && start + next * intervalMs <= performance.now(); next++) {
      if (running.size >= maxInFlight) {
        outcome.skipped++;
        continue;
      }
      outcome.lateMs.push(performance.now() - (start + next * intervalMs));
      const cycle = timedCycle(lock, numbers, outcome);
      running.add(cycle);
      void cycle.finally(() => running.delete(cycle));
    }
    if (next < outcome.scheduled) await sleep(Math.max(0, start + next * intervalMs - performance.now()));
  }
  await Promise.all(running);
  return outcome;
}

/** One cycle, its acquire timed; a failure is counted, never thrown, so that one refusal does not end the schedule. */
async function timedCycle(lock: Lock, numbers: WorkerNumbers, outcome: OpenLoopOutcome): Promise<void> {
  const { worker, iteration } = numbers.take();
  try {
    const started = performance.now();
    const release = await lock(worker, iteration);
    outcome.acquireMs.push(performance.now() - started);
    await release();
  } catch (error) {
    outcome.failed++;
    outcome.firstError ??= error instanceof Error ? error.message : String(error);
  } finally {
    numbers.give(worker);
  }
}
