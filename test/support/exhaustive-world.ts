/**
 * One schedule's world for the systematic explorations (test/engine/*-exhaustive.test.ts): the
 * in-memory store behind a stepped store (test/support/systematic.ts), the invariant checks watching
 * it, and an engine per settings source, every process on its own clock. The processes of a scenario
 * share one engine per skew allowance; one configured with another allowance (an operator's CLI, say)
 * gets its own, over the same store.
 */

import { MemoryLockStore } from '../../packages/engine/src/memory-store.js';
import type { CompletedWork, Grant, LockTarget } from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { SettingsOverrides, SharedSettings } from '../../packages/engine/src/settings.js';
import type { LockStore } from '../../packages/engine/src/store.js';
import { workDocId, workKeyHash } from '../../packages/engine/src/work.js';
import { type Hold, nextInstant, OperationChecks, type Process } from './operation-checks.js';
import { type SystematicScheduler, steppedStore } from './systematic.js';

export interface WorldOptions {
  processes: Record<string, Process>;
  /** Processes whose writes revoke (an operator's revoke). */
  revokers?: readonly string[];
  /** Times past a stored one, besides 0 and each process's skew, at which a decision may change. */
  deltas?: readonly number[];
  /** The operator re-creates the lock index (forced) in these schedules (OperationChecks says what that exempts). */
  recreated?: boolean;
}

/**
 * The engines of one exploration, made once (a LockService takes milliseconds to build, more than a
 * schedule takes to run) and pointed at each schedule's store and clock in turn: one per skew
 * allowance, all with `settings`.
 */
export class Stage {
  private engines = new Map<number | undefined, LockService>();
  private store?: LockStore;
  private scheduler?: SystematicScheduler;
  private processes = new Map<string, Process>();
  /** The store as the engines see it: the current schedule's. */
  private readonly forwarding: LockStore = {
    read: (ids) => this.store!.read(ids),
    readPrimary: (ids) => this.store!.readPrimary(ids),
    write: (ops) => this.store!.write(ops),
    writeThenRead: (ops, ids) => this.store!.writeThenRead(ops, ids),
    findExpired: (before, size, after) => this.store!.findExpired(before, size, after),
    list: (query) => this.store!.list(query),
    findLiveBelow: (query) => this.store!.findLiveBelow(query),
    describe: () => this.store!.describe!(),
    sharedSettings: async () => ({ index: 'memory-locks', ...(this.recorded ? { recorded: this.recorded } : {}) }),
  };

  /** `recorded`: the shared settings the lock index records (none: an index made before they were recorded). */
  constructor(
    private readonly settings: SettingsOverrides = {},
    private readonly recorded?: SharedSettings,
  ) {}

  /** Points every engine at this schedule's store, scheduler and clocks. */
  enter(store: LockStore, scheduler: SystematicScheduler, processes: Map<string, Process>): void {
    this.store = store;
    this.scheduler = scheduler;
    this.processes = processes;
  }

  /** The engine given `skewMs` (undefined: given none, it takes the lock index's). */
  engine(skewMs: number | undefined): LockService {
    let engine = this.engines.get(skewMs);
    if (!engine) {
      engine = new LockService(this.forwarding, {
        ...this.settings,
        ...(skewMs !== undefined ? { maxClockSkewMs: skewMs } : {}),
        now: () => this.scheduler!.now + (this.processes.get(this.scheduler!.current())?.offset ?? 0),
        sleep: (ms) => this.scheduler!.sleep(ms),
      });
      this.engines.set(skewMs, engine);
    }
    return engine;
  }
}

export type World = ReturnType<typeof world>;

export function world(stage: Stage, scheduler: SystematicScheduler, options: WorldOptions) {
  const memory = new MemoryLockStore();
  const processes = new Map(Object.entries(options.processes));
  const checks = new OperationChecks(scheduler, memory, processes, new Set(options.revokers ?? []), options.recreated);
  const store = steppedStore(memory, scheduler, checks.onWrite, checks.onRead);
  stage.enter(store, scheduler, processes);
  const engineOf = (actor: string): LockService => {
    const process = processes.get(actor);
    if (!process) throw new Error(`no process ${actor}`);
    return stage.engine(process.unset ? undefined : process.skewMs);
  };
  return {
    /** The process does its work: a step of its own, so that others and time may come between its grant and its release. */
    works: (): Promise<void> => scheduler.schedule('works', checks.worked),
    memory,
    checks,
    store,
    engineOf,
    nextInstant: (at: number): number | undefined => nextInstant(memory, processes, at, options.deltas),
  };
}

/** The flat fields of a target, as LockService takes them. */
export function fieldsOf(target: LockTarget): Record<string, unknown> {
  const { namespace, granularity } = target;
  if (granularity === 'document') return { namespace, granularity, ids: target.ids };
  if (granularity === 'tree') return { namespace, granularity, path: target.path };
  return { namespace, granularity };
}

/**
 * One delivery of a piece of work: acquireWork (waitMs 0); on a grant the work runs and the release
 * records `completed` with the actor's name as result (the work: a step, and a renewal and another
 * step if asked); the hold ends when the work is done, or when a renewal answers that it was lost.
 */
export async function deliverWork(
  w: World,
  actor: string,
  target: LockTarget,
  key: string,
  options: { ttlMs: number; recordTtlMs: number; renew?: boolean; payloadHash?: string },
): Promise<'completed' | 'ran' | 'refused'> {
  const engine = w.engineOf(actor);
  const docId = workDocId(target.namespace, workKeyHash(target, key));
  const call = w.checks.workCall(actor, docId, options.payloadHash);
  const payload = options.payloadHash === undefined ? {} : { payloadHash: options.payloadHash };
  let answer: Grant | CompletedWork | { status: 'queued' };
  try {
    answer = await engine.acquireWork({
      ...fieldsOf(target),
      mode: 'exclusive',
      owner: actor,
      ttlMs: options.ttlMs,
      waitMs: 0,
      idempotencyKey: key,
      ...payload,
    });
  } catch (error) {
    w.checks.answered(call, { kind: 'error', name: (error as Error).name });
    return 'refused';
  }
  if ('status' in answer) {
    if (answer.status !== 'completed') throw new Error(`acquireWork without wake answered ${answer.status}`);
    w.checks.answered(call, { kind: 'completed', answer: answer as CompletedWork });
    return 'completed';
  }
  w.checks.answered(call, { kind: 'grant' });
  const hold = w.checks.granted(actor, target, answer, docId);
  const leaseToken = await work(w, hold, answer.leaseToken, options);
  if (leaseToken) await engine.release({ leaseToken, record: { status: 'completed', result: actor, ttlMs: options.recordTtlMs } }).catch(() => undefined);
  return 'ran';
}

/** The work under a grant: a step, then a renewal if asked and another step. The token to release with; undefined when the lease was lost. */
async function work(w: World, hold: Hold, leaseToken: string, options: { ttlMs: number; renew?: boolean }): Promise<string | undefined> {
  await w.works();
  if (!options.renew) {
    w.checks.stopped(hold);
    return leaseToken;
  }
  const sent = w.checks.mark();
  try {
    const renewal = await w.engineOf(hold.actor).renew({ leaseToken, ttlMs: options.ttlMs });
    w.checks.renewed(hold, renewal, sent);
    await w.works();
    w.checks.stopped(hold);
    return renewal.leaseToken;
  } catch {
    // Lost (or the store failed): it stops at once, and records nothing.
    w.checks.stopped(hold);
    return undefined;
  }
}

/**
 * A holder: acquires (waitMs 0), works, renews once if asked (and works on if renewed), releases. Its
 * hold ends when it stops working, or when it hears its lease is lost.
 */
export async function holdLock(
  w: World,
  actor: string,
  target: LockTarget,
  options: { ttlMs: number; mode?: 'exclusive' | 'shared'; permits?: { limit: number; count: number }; renew?: boolean },
): Promise<'held' | 'refused'> {
  const engine = w.engineOf(actor);
  let grant: Grant;
  try {
    grant = await engine.acquire({
      ...fieldsOf(target),
      mode: options.mode ?? 'exclusive',
      owner: actor,
      ttlMs: options.ttlMs,
      waitMs: 0,
      ...(options.permits ? { permits: options.permits } : {}),
    });
  } catch {
    return 'refused';
  }
  const hold = w.checks.granted(actor, target, grant);
  const leaseToken = await work(w, hold, grant.leaseToken, options);
  await engine.release({ leaseToken: leaseToken ?? grant.leaseToken }).catch(() => undefined);
  return 'held';
}
