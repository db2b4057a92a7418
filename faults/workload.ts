/**
 * The fault runner's clients: each loops acquire → work → (renew) → release, one call at a time, and
 * records every call in the history (faults/history.ts). The default workload mixes document locks
 * (ids k0..kN-1, some calls taking two at once) and tree locks on a small tree (/d0../d2 and
 * /d{i}/f0../d{i}/f3 by default: directories and files, so locks above and below a path meet), shared and
 * exclusive, in one namespace (document and tree locks are separate lock spaces there).
 */

import { LeaseLostError, LockContentionError, LockHeldError, LockOutcomeUnknownError, StoreUnavailableError } from '../packages/engine/src/errors.js';
import type { Grant } from '../packages/engine/src/model.js';
import { LockService } from '../packages/engine/src/service.js';
import type { LockSettings } from '../packages/engine/src/settings.js';
import type { LockStore } from '../packages/engine/src/store.js';
import { interpose } from '../tools/shared/interposed-store.js';
import type { Behaviour } from './catalog.js';
import type { HeldKey, HistoryEvent } from './history.js';
import { skewedClock } from './skew.js';
import type { FaultNotifier } from './wake.js';

/** The one namespace the clients lock in (on a lock index with several shards, it lives on one of them). */
export const FAULTS_NAMESPACE = 'faults';

export type WorkloadGranularity = 'mixed' | 'document' | 'tree';

export interface Workload {
  granularity: WorkloadGranularity;
  /** Document ids k0..k(keys-1). */
  keys: number;
  /** Tree directories /d0../d(directories-1), each with the files f0..f3. */
  directories: number;
  /** A holder works this long, uniformly, between grant and release. */
  workMs: { min: number; max: number };
  /**
   * Waiting acquirers retry at most this far apart (the engine's retry.maxDelayMs; its default,
   * 1 s, when absent). The soak shortens it: with many waiters a released lock otherwise sits idle
   * until one of them wakes up, and the soak's cycles came three times slower.
   */
  retryMaxDelayMs?: number;
}

/** Files per tree directory. */
export const FILES_PER_DIRECTORY = 4;

/** The lease every grant asks for: short, so that crashed holders' leases run out within a run. */
export const TTL_MS = 2_000;

/** What a run's clients did, counted live (the soak's progress lines read it). */
export interface Tally {
  /** Completed lock cycles: a grant, the work and its release, lost renewal or crash. */
  cycles: number;
  grants: number;
  /** Acquires refused because the lock was held (or raced for too long). */
  conflicts: number;
  /** Calls whose outcome is unknown (they may have applied). */
  unknown: number;
}

export const emptyTally = (): Tally => ({ cycles: 0, grants: 0, conflicts: 0, unknown: 0 });

export interface Target {
  request: { granularity: 'document'; ids: string[] } | { granularity: 'tree'; path: string };
  /** What the checker judges: the documents, or the tree path (the checker derives the intentions above it). */
  keys: (exclusive: boolean) => HeldKey[];
}

function documentTarget(workload: Workload, random: () => number, twoKeys: boolean): Target {
  const first = Math.floor(random() * workload.keys);
  const ids = twoKeys && workload.keys > 1 ? [`k${first}`, `k${(first + 1) % workload.keys}`] : [`k${first}`];
  return { request: { granularity: 'document', ids }, keys: (exclusive) => ids.map((id) => ({ key: `d|${id}`, mode: exclusive ? 'X' : 'S' })) };
}

function treeTarget(workload: Workload, random: () => number, directory: boolean): Target {
  const dir = `/d${Math.floor(random() * workload.directories)}`;
  const path = directory ? dir : `${dir}/f${Math.floor(random() * FILES_PER_DIRECTORY)}`;
  return { request: { granularity: 'tree', path }, keys: (exclusive) => [{ key: `t|${path}`, mode: exclusive ? 'X' : 'S' }] };
}

/**
 * A target of the workload. Half the calls of a mixed workload lock documents (30 % of them two ids)
 * and half lock the tree (15 % of them a directory: those refresh and search below, and are slow).
 * `twoStep` asks for a target whose acquire makes more than one store call (two ids, or a directory).
 */
export function pickTarget(workload: Workload, random: () => number, twoStep = false): Target {
  const tree = workload.granularity === 'tree' || (workload.granularity === 'mixed' && random() < 0.5);
  if (!tree) return documentTarget(workload, random, twoStep || random() < 0.3);
  return treeTarget(workload, random, twoStep || random() < 0.15);
}

/** The semaphore of the document workloads (docs/permits.md): at most 2 permits, held 1 or 2 at a time. */
export const SEMAPHORE = { id: 'sem', limit: 2 };

function semaphoreTarget(random: () => number): Target & { permits: { limit: number; count: number } } {
  const permits = { limit: SEMAPHORE.limit, count: random() < 0.7 ? 1 : 2 };
  return { request: { granularity: 'document', ids: [SEMAPHORE.id] }, keys: () => [{ key: `d|${SEMAPHORE.id}`, mode: 'X', permits }], permits };
}

/** A single-key target (what a waiter woken by a channel may queue for): one id, or one tree path. */
function singleKeyTarget(workload: Workload, random: () => number): Target {
  const tree = workload.granularity === 'tree' || (workload.granularity === 'mixed' && random() < 0.5);
  return tree ? treeTarget(workload, random, random() < 0.15) : documentTarget(workload, random, false);
}

/** How long a channel waiter's ticket may wait in the queue. */
export const QUEUE_TTL_MS = 4_000;

/** How long the lock stays reserved for a waiter told `ready` (the engine's queue.claimWindowMs in fault runs). */
export const CLAIM_WINDOW_MS = 2_000;

/** A reserved waiter that has not claimed is woken again after this (queue.rewakeAfterMs). */
export const REWAKE_AFTER_MS = 1_000;

/**
 * A channel waiter's own timeout (a task token's, an SQS consumer's), from its queue call: past its
 * ticket's end plus the clock skew allowance and a sweep, by which the engine has told it `failed`
 * if it ever will. A waiter that hears nothing by then (its message lost, its ticket dropped with an
 * incarnation of the lock index) stops there, holding nothing.
 */
export const CHANNEL_TIMEOUT_MS = QUEUE_TTL_MS + 3_000;

const outcomeOf = (error: unknown): 'fail' | 'info' =>
  error instanceof LockOutcomeUnknownError || (error instanceof StoreUnavailableError && error.context.ambiguous) ? 'info' : 'fail';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The acquirer faults act inside one client's acquire, between two of its store calls: each client
 * has its own engine over the shared store, with a hook that a call can arm.
 */
function clientEngine(
  store: LockStore,
  settings: Readonly<LockSettings>,
  clockOffsetMs: number,
): { engine: LockService; arm: (fault: 'stall' | 'freeze') => void; disarm: () => void } {
  let armed: 'stall' | 'freeze' | undefined;
  let writes = 0;
  const afterFirstWrite = async (): Promise<void> => {
    if (!armed || writes === 0) return;
    const fault = armed;
    armed = undefined;
    // Stalled past the TTL between two rounds; or frozen for good, as a Lambda that timed out.
    await (fault === 'stall' ? sleep(TTL_MS + 400) : new Promise<never>(() => {}));
  };
  const hooked = interpose(store, {
    read: async (ids, next) => {
      await afterFirstWrite();
      return next(ids);
    },
    readPrimary: async (ids, next) => {
      await afterFirstWrite();
      return next(ids);
    },
    write: async (ops, next) => {
      await afterFirstWrite();
      const outcomes = await next(ops);
      writes++;
      return outcomes;
    },
    // A directory lock searches below after its write: the stall can fall there too.
    findLiveBelow: async (query, next) => {
      await afterFirstWrite();
      return next(query);
    },
  });
  return {
    engine: new LockService(hooked, { ...settings, now: skewedClock(clockOffsetMs) }),
    arm: (fault) => {
      armed = fault;
      writes = 0;
    },
    disarm: () => {
      armed = undefined;
    },
  };
}

export interface ClientContext {
  store: LockStore;
  settings: Readonly<LockSettings>;
  workload: Workload;
  behaviour: Behaviour;
  history: HistoryEvent[];
  tally: Tally;
  /** Whether the client should start another cycle. */
  running: () => boolean;
  /**
   * Waiters woken by a channel: when set, one call in five (of those no acquirer fault is armed for)
   * queues for a single key with acquireOrQueue and waits for its channel, then claims; `grantedAtOnce`
   * counts acquires with wake that answered a grant instead of `queued` (the engine must never).
   */
  wake?: { notifier: FaultNotifier; grantedAtOnce: number };
}

class FunctionTimeout extends Error {
  override name = 'FunctionTimeout';
}

/** One client until `running()` says stop. A client whose call froze (timeout-acquirers) carries on with a fresh engine, as a new Lambda would. */
export async function runClient(context: ClientContext, id: number, clockOffsetMs: number): Promise<void> {
  const { workload, behaviour, history, tally } = context;
  const client = `c${id}`;
  const record = (event: Omit<HistoryEvent, 'client' | 'time'>): void => void history.push({ client, time: Date.now(), ...event });
  let { engine, arm, disarm } = clientEngine(context.store, context.settings, clockOffsetMs);
  for (let call = 0; context.running(); call++) {
    const faulty = behaviour.acquirers !== undefined && Math.random() < behaviour.acquirers.rate;
    const woken = context.wake !== undefined && !faulty && Math.random() < 0.2;
    // One plain call in six of a document workload takes permits of the semaphore instead.
    const permits = !woken && !faulty && workload.granularity !== 'tree' && Math.random() < 0.15 ? semaphoreTarget(Math.random) : undefined;
    const target = permits ?? (woken ? singleKeyTarget(workload, Math.random) : pickTarget(workload, Math.random, faulty));
    const exclusive = permits !== undefined || Math.random() < 0.7;
    const keys = target.keys(exclusive);
    if (faulty) arm(behaviour.acquirers!.fault);
    record({ type: 'invoke', op: 'acquire', keys });
    let grant: Grant;
    if (woken) {
      const claimed = await acquireWoken(context.wake!, engine, client, call, target, exclusive, tally, record);
      if (!claimed) continue;
      grant = claimed;
    } else
      try {
        const acquiring = engine.acquire({
          namespace: FAULTS_NAMESPACE,
          ...target.request,
          mode: exclusive ? 'exclusive' : 'shared',
          owner: client,
          ttlMs: TTL_MS,
          // Single-key waiters queue; some wait long enough to be served after a holder's lease runs out.
          waitMs: Math.random() < 0.25 ? 3_000 : 1_000,
          requestId: `${client}-${call}`,
          ...(permits ? { permits: permits.permits } : {}),
        });
        // A frozen call never answers: the caller gives up on it after its own timeout.
        grant = await (faulty && behaviour.acquirers!.fault === 'freeze'
          ? Promise.race([acquiring, sleep(3_000).then(() => Promise.reject(new FunctionTimeout('the function timed out')))])
          : acquiring);
        disarm();
      } catch (error) {
        // An acquire refused before its first write never reached the fault: it must not carry over to the next call.
        disarm();
        if (error instanceof FunctionTimeout) {
          record({ type: 'info', op: 'acquire', error: error.name });
          tally.unknown++;
          ({ engine, arm, disarm } = clientEngine(context.store, context.settings, clockOffsetMs));
          continue;
        }
        const type = outcomeOf(error);
        record({ type, op: 'acquire', error: (error as Error).name });
        if (type === 'info') tally.unknown++;
        if (error instanceof LockHeldError || error instanceof LockContentionError) tally.conflicts++;
        else await sleep(50);
        continue;
      }
    tally.grants++;
    // The lease ends at the holder's clock's expiresAt: on the real clock, that is its offset earlier.
    const realEnd = (expiresAt: number): number => expiresAt - clockOffsetMs;
    // A channel waiter's grant is its claim's answer: recorded like any other.
    record({
      type: 'ok',
      op: 'acquire',
      leaseId: grant.leaseId,
      keys,
      fencingToken: grant.fencingToken,
      expiresAt: realEnd(grant.expiresAt),
      ...(clockOffsetMs !== 0 ? { clockOffsetMs } : {}),
    });
    let leaseToken = grant.leaseToken;
    // The holder works, renewing once in a while; a stalling holder overruns its lease and carries on.
    const stalls = Math.random() < behaviour.stallRate;
    await sleep(stalls ? TTL_MS + 300 : workload.workMs.min + Math.random() * (workload.workMs.max - workload.workMs.min));
    if (stalls || Math.random() < 0.3) {
      record({ type: 'invoke', op: 'renew', leaseId: grant.leaseId });
      try {
        const renewal = await engine.renew({ leaseToken, ttlMs: TTL_MS });
        leaseToken = renewal.leaseToken;
        record({ type: 'ok', op: 'renew', leaseId: grant.leaseId, fencingToken: renewal.fencingToken, expiresAt: realEnd(renewal.expiresAt) });
        await sleep(Math.min(20, workload.workMs.max));
      } catch (error) {
        const type = error instanceof LeaseLostError ? 'fail' : outcomeOf(error);
        record({ type, op: 'renew', leaseId: grant.leaseId, error: (error as Error).name });
        if (type === 'info') tally.unknown++;
      }
    }
    // Some holders die holding the lock: the lease must run out on its own.
    if (Math.random() < behaviour.crashRate) {
      tally.cycles++;
      continue;
    }
    record({ type: 'invoke', op: 'release', leaseId: grant.leaseId });
    try {
      const result = await engine.release({ leaseToken });
      record({ type: 'ok', op: 'release', leaseId: grant.leaseId, outcome: result.outcome });
    } catch (error) {
      const type = outcomeOf(error);
      record({ type, op: 'release', leaseId: grant.leaseId, error: (error as Error).name });
      if (type === 'info') tally.unknown++;
    }
    tally.cycles++;
  }
}

/**
 * One call of a waiter woken by a channel. It queues (acquire with `wake` and its requestId: the
 * answer is `queued`, never a grant), listens on its channel until it is told `ready` or `failed`, or
 * its channel's own timeout passes, and on `ready` claims: the acquire again with the message's target,
 * mode, owner and requestId, without `wake`, waitMs 0. The claim's answer is the grant. Returns it, or
 * undefined after recording why not (the call's invoke was recorded already): told failed, gone,
 * timed out (`fail`: nothing held), or the claim refused (a lapsed reservation) or failed.
 */
export async function acquireWoken(
  wake: NonNullable<ClientContext['wake']>,
  engine: LockService,
  client: string,
  call: number,
  target: Target,
  exclusive: boolean,
  tally: Tally,
  record: (event: Omit<HistoryEvent, 'client' | 'time'>) => void,
): Promise<Grant | undefined> {
  const { notifier } = wake;
  const { channel, wake: wakeInput } = notifier.open(client, call);
  const requestId = `${client}-${call}`;
  try {
    const answer = await engine.acquireOrQueue({
      namespace: FAULTS_NAMESPACE,
      ...target.request,
      mode: exclusive ? 'exclusive' : 'shared',
      owner: client,
      ttlMs: TTL_MS,
      waitMs: 0,
      queueTtlMs: QUEUE_TTL_MS,
      requestId,
      wake: wakeInput,
    });
    // The engine never grants an acquire with wake: a grant here is recorded as one (the checker judges it) and counted.
    if (!('status' in answer)) {
      wake.grantedAtOnce++;
      notifier.end(channel, 'claimed');
      return answer;
    }
  } catch (error) {
    const type = outcomeOf(error);
    if (type === 'fail') {
      notifier.notQueued(channel);
      record({ type, op: 'acquire', error: (error as Error).name });
      if (error instanceof LockHeldError || error instanceof LockContentionError) tally.conflicts++;
      else await sleep(50);
      return undefined;
    }
    // Unknown: the ticket may be in the queue, so the waiter listens all the same.
  }
  const heard = await notifier.listen(channel, CHANNEL_TIMEOUT_MS);
  if (heard.kind !== 'message' || heard.message.outcome !== 'ready') {
    const end = heard.kind === 'message' ? 'told-failed' : heard.kind === 'gone' ? 'gave-up' : 'timed-out';
    notifier.end(channel, end);
    const error =
      heard.kind === 'message' && heard.message.outcome === 'failed' ? heard.message.error : heard.kind === 'gone' ? 'ChannelGone' : 'ChannelTimeout';
    record({ type: 'fail', op: 'acquire', error });
    tally.conflicts++;
    return undefined;
  }
  const { message } = heard;
  // The message names the call to claim: it must be this waiter's (a claim for another call would not be its grant).
  const asked = target.request;
  const named = message.target;
  const same =
    named.namespace === FAULTS_NAMESPACE &&
    named.granularity === asked.granularity &&
    (asked.granularity === 'document'
      ? named.granularity === 'document' && JSON.stringify(named.ids) === JSON.stringify(asked.ids)
      : named.granularity === 'tree' && named.path === asked.path) &&
    message.mode === (exclusive ? 'exclusive' : 'shared') &&
    message.owner === client &&
    message.requestId === requestId;
  if (!same) {
    notifier.tally.mismatched++;
    notifier.end(channel, 'claim-failed');
    record({ type: 'fail', op: 'acquire', error: 'WakeMessageMismatch' });
    return undefined;
  }
  try {
    const grant = await engine.acquire({
      ...message.target,
      mode: message.mode,
      owner: message.owner,
      ttlMs: TTL_MS,
      waitMs: 0,
      ...(message.requestId !== undefined ? { requestId: message.requestId } : {}),
    });
    notifier.end(channel, 'claimed');
    return grant;
  } catch (error) {
    notifier.end(channel, 'claim-failed');
    const type = outcomeOf(error);
    record({ type, op: 'acquire', error: `claim ${(error as Error).name}` });
    if (type === 'info') tally.unknown++;
    if (error instanceof LockHeldError || error instanceof LockContentionError) tally.conflicts++;
    return undefined;
  }
}
