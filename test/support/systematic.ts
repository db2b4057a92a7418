/**
 * Systematic exploration of the real engine's operations: every schedule of a small configuration
 * of concurrent calls, up to a bound, each run from scratch (a stateless depth-first search over the
 * scheduler's choices, as CHESS does). Every store call of every process is a step the scheduler
 * picks; a write is two steps, the write applying and its answer reaching the caller, so that time
 * and other processes can come between the two (a slow answer); "time passes" is a step too, to the
 * next instant at which some process's decision may change (the scenario says which).
 *
 * The bound: the default schedule runs the current process until it waits (it ends, or sleeps),
 * then the next process in the scenario's order; time passes by default only when no process is
 * ready. Any other choice at a step is a deviation: another process preempting the current one, a
 * process other than the next in turn, time passing while some process is ready (a stall, a slow
 * answer, a later delivery). Every schedule with at most `deviations` deviations is run: with one,
 * a stall or another call in any gap of one call; with two, a stall and another whole call in the
 * gap. This is preemption bounding (Musuvathi and Qadeer, PLDI 2007) that also counts a choice at a
 * process's end, in the spirit of delay bounding (Emmi, Qadeer and Rakamaric, POPL 2011): it keeps
 * the count of schedules near (steps choose deviations) x (choices per step)^deviations, so that
 * real operations of 30-40 steps can be explored with two. Within a process, store calls it makes
 * in parallel run in the order it issued them (FIFO per process).
 *
 * Determinism: the engine's own jitter (Math.random) must be fixed by the test, and nothing else the
 * engine does may depend on chance but lease ids, whose value decides nothing. A replay checks that
 * each step offers as many choices as it did the first time.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockStore, StoredLock, WriteOp, WriteOutcome } from '../../packages/engine/src/store.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

type TaskKind = 'call' | 'answer' | 'sleep';
interface Task {
  actor: string;
  label: string;
  kind: TaskKind;
  run: () => void;
}

/** The pseudo-process that moves the clock. */
export const TIME = 'time';

export class SystematicScheduler {
  /** True time (virtual ms); each process reads its own clock, an offset from it. */
  now = 1_000_000;
  readonly actors = new AsyncLocalStorage<string>();
  readonly pending: Task[] = [];

  /** The process running the code that calls this (the scenario names each). */
  current(): string {
    return this.actors.getStore() ?? 'unknown';
  }

  schedule<T>(label: string, fn: () => T | Promise<T>, kind: TaskKind = 'call'): Promise<T> {
    const actor = this.current();
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ actor, label, kind, run: () => void Promise.resolve().then(fn).then(resolve, reject) });
    });
  }

  sleep = (ms: number): Promise<void> => {
    const wakeAt = this.now + ms;
    return this.schedule(
      `sleep ${Math.round(ms)}`,
      () => {
        this.now = Math.max(this.now, wakeAt);
      },
      'sleep',
    );
  };
}

/** What a stepped store tells its watcher of every write that applied: who wrote, and the documents before and after. */
export interface WriteSeen {
  actor: string;
  ops: readonly WriteOp[];
  outcomes: WriteOutcome[];
  before: Map<string, StoredLock | null>;
  after: Map<string, StoredLock | null>;
}

/**
 * `store` with every call a step of `scheduler`, and every write's answer a step of its own. `watch`
 * hears of every write as it applies (a look at the primary around it, no step).
 */
export function steppedStore(
  store: LockStore & { peek?(docId: string): StoredLock | null },
  scheduler: SystematicScheduler,
  watch?: (seen: WriteSeen) => void,
  watchRead?: (actor: string, docIds: readonly string[]) => void,
): LockStore {
  const call = <T>(label: string, fn: () => Promise<T>): Promise<T> => scheduler.schedule(label, fn);
  const writing = async <T>(label: string, ops: readonly WriteOp[], fn: () => Promise<T>, outcomesOf: (result: T) => WriteOutcome[]): Promise<T> => {
    const actor = scheduler.current();
    const result = await call(label, async () => {
      const docIds = [...new Set(ops.map((op) => op.docId))];
      const look = async (): Promise<Map<string, StoredLock | null>> =>
        store.peek ? new Map(docIds.map((docId) => [docId, store.peek!(docId)])) : store.read(docIds);
      const before = watch ? await look() : new Map();
      const result = await fn();
      if (watch) watch({ actor, ops, outcomes: outcomesOf(result), before, after: await look() });
      return result;
    });
    await scheduler.schedule(`answer of ${label}`, () => undefined, 'answer');
    return result;
  };
  const named = (ops: readonly WriteOp[]): string => ops.map((op) => `${op.kind} ${op.docId}`).join(', ');
  return {
    read: (ids) => {
      const actor = scheduler.current();
      return call(`read ${ids.join(' ')}`, () => {
        watchRead?.(actor, ids);
        return store.read(ids);
      });
    },
    readPrimary: (ids) => {
      const actor = scheduler.current();
      return call(`readPrimary ${ids.join(' ')}`, () => {
        watchRead?.(actor, ids);
        return store.readPrimary(ids);
      });
    },
    write: (ops) =>
      writing(
        `write ${named(ops)}`,
        ops,
        () => store.write(ops),
        (outcomes) => outcomes,
      ),
    writeThenRead: (ops, ids) =>
      writing(
        `write ${named(ops)} then read`,
        ops,
        () => store.writeThenRead(ops, ids),
        (result) => result.outcomes,
      ),
    findExpired: (before, size, after) => call('findExpired', () => store.findExpired(before, size, after)),
    list: (query) => call('list', () => store.list(query)),
    findLiveBelow: (query) => call(`findLiveBelow ${query.path ?? ''}`, () => store.findLiveBelow(query)),
    ...(store.describe ? { describe: () => call('describe', () => store.describe!()) } : {}),
  };
}

/** One configuration, built afresh for every schedule over a new scheduler. */
export interface Scenario {
  /** The processes, in a fixed order (the order of the default schedule): each body runs in its own async context. */
  actors: Array<[string, () => Promise<unknown>]>;
  /** The next true instant after `now` at which some process's decision may change (undefined: none). */
  nextInstant?: (now: number) => number | undefined;
  /** What broke, once every process is done. */
  check: () => string[] | Promise<string[]>;
}

export interface Bounds {
  /** Schedules with at most this many deviations are explored. */
  deviations: number;
  /** How many times time may pass in one schedule. */
  ticks: number;
  /** A schedule longer than this is cut (counted, not checked). */
  maxSteps: number;
  /** Stop after this many schedules (a safety net for a bound set too high). */
  maxSchedules: number;
}

export interface Failure {
  violations: string[];
  schedule: string[];
  deviations: number;
}

export interface ExplorationReport {
  schedules: number;
  /** Schedules cut at maxSteps. */
  cut: number;
  failures: number;
  /** Per kind of violation (its text up to the first colon): the failing schedule with the fewest deviations, then the fewest steps. */
  kinds: Map<string, Failure>;
  /** Whether the search ended by maxSchedules rather than by covering the bound. */
  truncated: boolean;
  ms: number;
}

interface StepRecord {
  /** The choices offered, default first. */
  offered: string[];
  position: number;
  deviationsBefore: number;
  deviating: boolean[];
}

interface Option {
  actor: string;
  label: string;
  task?: Task;
}

/** Runs one schedule: the given positions first (0 is the default choice at each step), then the default. */
async function runSchedule(
  build: (scheduler: SystematicScheduler) => Scenario,
  prefix: readonly number[],
  bounds: Bounds,
): Promise<{ steps: StepRecord[]; schedule: string[]; violations: string[]; cut: boolean; deviations: number }> {
  const scheduler = new SystematicScheduler();
  const scenario = build(scheduler);
  const order = new Map(scenario.actors.map(([name], index) => [name, index]));
  const thrown: string[] = [];
  let done = 0;
  for (const [name, body] of scenario.actors) {
    void scheduler.actors.run(name, () =>
      body()
        .catch((error: unknown) => {
          thrown.push(`${name} threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
        })
        .finally(() => {
          done++;
        }),
    );
  }
  const steps: StepRecord[] = [];
  const schedule: string[] = [];
  let current: string | undefined;
  let deviations = 0;
  let ticks = 0;
  let cut = false;
  for (let step = 0; ; step++) {
    await turn();
    if (scheduler.pending.length === 0 && done < scenario.actors.length) await turn();
    if (done === scenario.actors.length && scheduler.pending.length === 0) break;
    if (step >= bounds.maxSteps) {
      cut = true;
      break;
    }
    // The first pending task of each process (FIFO within one), in the scenario's order, then time.
    const options: Option[] = [];
    for (const task of [...scheduler.pending].sort((a, b) => order.get(a.actor)! - order.get(b.actor)!)) {
      if (!options.some((option) => option.actor === task.actor)) options.push({ actor: task.actor, label: task.label, task });
    }
    const next = ticks < bounds.ticks ? scenario.nextInstant?.(scheduler.now) : undefined;
    if (next !== undefined && next > scheduler.now) options.push({ actor: TIME, label: `time passes to +${next - 1_000_000} ms` });
    if (options.length === 0) throw new Error(`stuck: nothing scheduled, ${scenario.actors.length - done} processes not done\n${schedule.join('\n')}`);
    // The default: the current process while it is ready; else the next in the scenario's order that is
    // ready (one that sleeps only if none is), else time. Any other choice is a deviation and costs one.
    const isReady = (actor: string): boolean => scheduler.pending.some((task) => task.actor === actor && task.kind !== 'sleep');
    const after = (option: Option): number =>
      option.actor === TIME ? Number.POSITIVE_INFINITY : (order.get(option.actor)! - (order.get(current ?? '') ?? -1) + order.size) % order.size || order.size;
    const byTurn = options.filter((option) => option.actor !== TIME).sort((a, b) => after(a) - after(b));
    const fallback = current !== undefined && isReady(current) ? options.find((option) => option.actor === current) : undefined;
    const preferred = fallback ?? byTurn.find((option) => isReady(option.actor)) ?? byTurn[0] ?? options[0]!;
    const offered = [preferred, ...options.filter((option) => option !== preferred)];
    const position = step < prefix.length ? prefix[step]! : 0;
    const chosen = offered[position];
    if (!chosen) throw new Error(`not deterministic: step ${step} offers ${offered.length} choices, the replay wants the ${position + 1}th`);
    const deviating = offered.map((_, index) => index > 0);
    steps.push({ offered: offered.map((option) => option.actor), position, deviationsBefore: deviations, deviating });
    if (deviating[position]) deviations++;
    schedule.push(`${deviating[position] ? '* ' : ''}${chosen.actor}: ${chosen.label} (at +${scheduler.now - 1_000_000} ms)`);
    if (chosen.task) {
      scheduler.pending.splice(scheduler.pending.indexOf(chosen.task), 1);
      current = chosen.actor;
      chosen.task.run();
    } else {
      ticks++;
      scheduler.now = next!;
    }
  }
  const violations = cut ? [] : [...thrown, ...(await scenario.check())];
  return { steps, schedule, violations, cut, deviations };
}

/** The next schedule in depth-first order within the bound, as positions; undefined when every one has been run. */
function nextPrefix(steps: readonly StepRecord[], bound: number): number[] | undefined {
  for (let index = steps.length - 1; index >= 0; index--) {
    const step = steps[index]!;
    for (let position = step.position + 1; position < step.offered.length; position++) {
      if (step.deviationsBefore + (step.deviating[position] ? 1 : 0) <= bound) {
        return [...steps.slice(0, index).map((earlier) => earlier.position), position];
      }
    }
  }
  return undefined;
}

/**
 * Every schedule of `build` within `bounds`, each checked by the scenario. Keeps the failing schedule
 * with the fewest deviations, then steps (the shortest to read).
 */
export async function explore(build: (scheduler: SystematicScheduler) => Scenario, bounds: Bounds): Promise<ExplorationReport> {
  const started = performance.now();
  const report: ExplorationReport = { schedules: 0, cut: 0, failures: 0, kinds: new Map(), truncated: false, ms: 0 };
  let prefix: number[] | undefined = [];
  while (prefix) {
    if (report.schedules >= bounds.maxSchedules) {
      report.truncated = true;
      break;
    }
    const run = await runSchedule(build, prefix, bounds);
    report.schedules++;
    if (run.cut) report.cut++;
    if (run.violations.length > 0) report.failures++;
    for (const kind of new Set(run.violations.map((violation) => violation.split(':')[0]!))) {
      const best = report.kinds.get(kind);
      if (!best || run.deviations < best.deviations || (run.deviations === best.deviations && run.schedule.length < best.schedule.length)) {
        report.kinds.set(kind, { violations: run.violations, schedule: run.schedule, deviations: run.deviations });
      }
    }
    prefix = nextPrefix(run.steps, bounds.deviations);
  }
  report.ms = Math.round(performance.now() - started);
  return report;
}

/** The failures as a test prints them: per kind, its shortest schedule. Empty when none. */
export function describeFailures(name: string, report: ExplorationReport): string {
  if (report.failures === 0) return '';
  const kinds = [...report.kinds.entries()].map(([kind, failure]) =>
    [
      `${kind}: shortest schedule (${failure.deviations} deviations, ${failure.schedule.length} steps; * marks a deviation):`,
      ...failure.violations.map((violation) => `  ${violation}`),
      ...failure.schedule.map((step) => `    ${step}`),
    ].join('\n'),
  );
  return [`${name}: ${report.failures} of ${report.schedules} schedules broke`, ...kinds].join('\n');
}
