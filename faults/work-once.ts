/**
 * The work-revoke run's workload: work that runs once under at-least-once delivery, with an operator
 * revoking now and then. Messages, each naming one piece of work by its idempotency key on one of the
 * documents k0..k(keys-1), are delivered to the clients as a queue would: some twice at once, some again
 * later (a visibility timeout; some of those just around the record's expiry), and each again until it
 * is done (recorded `completed`, or answered with its record). A delivery acquires with the key: a
 * grant runs the work and releases with a record (`completed`, or `failed` now and then; its result
 * names the lease, so that a later answer says whose record it is); a few holders die without a record.
 * The store around each client stalls some record writes (a GC pause between the record's reads and
 * its write, where a revoke may land) and a few work claims' answers (past the lease).
 * Every call goes to the history (faults/history.ts), which faults/work-checker.ts judges.
 */
import { LeaseLostError, LockOutcomeUnknownError, StoreUnavailableError, WorkInProgressError } from '../packages/engine/src/errors.js';
import { tokenAt } from '../packages/engine/src/fencing.js';
import type { CompletedWork, Grant, Queued } from '../packages/engine/src/model.js';
import { LockService } from '../packages/engine/src/service.js';
import type { LockSettings } from '../packages/engine/src/settings.js';
import type { LockStore, WriteOp } from '../packages/engine/src/store.js';
import { interpose } from '../tools/shared/interposed-store.js';
import type { HeldKey, HistoryEvent } from './history.js';
import { skewedClock } from './skew.js';
import { FAULTS_NAMESPACE, TTL_MS } from './workload.js';

/** How long a record stands: short, so that deliveries after its expiry (and around it) happen within a run. */
export const RECORD_TTL_MS = 3_000;

/** Shares of the workload, in one place. */
export const WORK_ONCE = {
  /** A new message delivered to two clients at once. */
  twinRate: 0.25,
  /** A message done, delivered again later (a duplicate), and of those how many land around its record's expiry. */
  againRate: 0.35,
  nearExpiryRate: 0.35,
  /** A holder records `failed` (the work runs again on the next delivery). */
  failRate: 0.15,
  /** A holder dies without a record (its lease runs out, the message comes back). */
  crashRate: 0.05,
  /** Record writes held up between the record's reads and its write, and for how long. */
  recordStallRate: 0.25,
  recordStallMs: { min: 20, max: 150 },
  /** Work claims whose answer comes back past the lease. */
  claimStallRate: 0.02,
  /** A message is given up after this many deliveries. */
  maxDeliveries: 8,
  /** The operator revokes one document this often. */
  revokeEveryMs: { min: 150, max: 450 },
} as const;

/** What the work clients and the operator did, counted live. */
export interface WorkTally {
  messages: number;
  deliveries: number;
  /** Deliveries granted the work (runs). */
  runs: number;
  completed: number;
  failed: number;
  /** Records refused (LeaseLostError: revoked, taken over or run out). */
  refused: number;
  /** Deliveries answered with a record. */
  answered: number;
  inProgress: number;
  crashed: number;
  revokes: number;
  /** Holders the revokes took. */
  revokedHolders: number;
  /** Record writes held up before they went, and claim answers held up past the lease. */
  recordStalls: number;
  claimStalls: number;
}

export const emptyWorkTally = (): WorkTally => ({
  messages: 0,
  deliveries: 0,
  runs: 0,
  completed: 0,
  failed: 0,
  refused: 0,
  answered: 0,
  inProgress: 0,
  crashed: 0,
  revokes: 0,
  revokedHolders: 0,
  recordStalls: 0,
  claimStalls: 0,
});

export interface Message {
  /** The idempotency key. */
  key: string;
  /** The document its work locks. */
  id: string;
  deliveries: number;
  done: boolean;
}

/** The queue the messages come from: due redeliveries first, else a new message (sometimes delivered twice at once). */
export class Deliveries {
  private readonly due: Array<{ message: Message; at: number }> = [];
  private count = 0;

  constructor(
    private readonly keys: number,
    private readonly random: () => number,
    private readonly tally: WorkTally,
  ) {}

  take(now: number): Message {
    const position = this.due.findIndex((entry) => entry.at <= now);
    const message = position >= 0 ? this.due.splice(position, 1)[0]!.message : this.fresh(now);
    message.deliveries++;
    this.tally.deliveries++;
    return message;
  }

  /** After a delivery: again soon while not done (at least once), and sometimes once more after it is done (a duplicate). */
  ended(message: Message, done: boolean, now: number): void {
    if (message.done || message.deliveries >= WORK_ONCE.maxDeliveries) return;
    if (!done) {
      this.later(message, now + 300 + this.random() * 1_200);
      return;
    }
    message.done = true;
    if (this.random() >= WORK_ONCE.againRate) return;
    const nearExpiry = this.random() < WORK_ONCE.nearExpiryRate;
    this.later(message, now + (nearExpiry ? RECORD_TTL_MS - 400 + this.random() * 800 : 200 + this.random() * (RECORD_TTL_MS + 1_000)));
  }

  private fresh(now: number): Message {
    const message: Message = { key: `m${this.count++}`, id: `k${Math.floor(this.random() * this.keys)}`, deliveries: 0, done: false };
    this.tally.messages++;
    if (this.random() < WORK_ONCE.twinRate) this.later(message, now);
    return message;
  }

  private later(message: Message, at: number): void {
    this.due.push({ message, at });
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const between = (range: { min: number; max: number }): number => range.min + Math.random() * (range.max - range.min);

const outcomeOf = (error: unknown): 'fail' | 'info' =>
  error instanceof LockOutcomeUnknownError || (error instanceof StoreUnavailableError && error.context.ambiguous) ? 'info' : 'fail';

const isRecordWrite = (op: WriteOp): boolean => op.kind !== 'delete' && op.body.work?.outcome !== undefined;
const isClaimWrite = (op: WriteOp): boolean => op.kind !== 'delete' && op.body.work?.claim !== undefined && op.body.work.outcome === undefined;

/**
 * A client's engine over the shared store, with its clock and a store that stalls some record writes
 * before they go and some claim answers after they landed, and notes the token of the record write
 * that applied (the client makes one call at a time, so it is its current release's).
 */
function workEngine(store: LockStore, settings: Readonly<LockSettings>, clockOffsetMs: number, tally: WorkTally) {
  const seen: { recordToken?: string } = {};
  const hooked = interpose(store, {
    write: async (ops, next) => {
      const record = ops.some(isRecordWrite);
      if (record && Math.random() < WORK_ONCE.recordStallRate) {
        tally.recordStalls++;
        await sleep(between(WORK_ONCE.recordStallMs));
      }
      const outcomes = await next(ops);
      for (const [position, outcome] of outcomes.entries()) if (outcome.ok && isRecordWrite(ops[position]!)) seen.recordToken = tokenAt(outcome);
      if (ops.some(isClaimWrite) && Math.random() < WORK_ONCE.claimStallRate) {
        tally.claimStalls++;
        await sleep(TTL_MS + 300);
      }
      return outcomes;
    },
  });
  return { engine: new LockService(hooked, { ...settings, now: skewedClock(clockOffsetMs) }), seen };
}

export interface WorkContext {
  store: LockStore;
  settings: Readonly<LockSettings>;
  history: HistoryEvent[];
  deliveries: Deliveries;
  work: WorkTally;
  /** Lock cycles and conflicts, for the table's columns. */
  tally: { cycles: number; grants: number; conflicts: number; unknown: number };
  running: () => boolean;
}

/** One work client until `running()` says stop: take a delivery, acquire with its key, run and record, or hear the answer. */
export async function runWorkClient(context: WorkContext, id: number, clockOffsetMs: number): Promise<void> {
  const { history, deliveries, work, tally } = context;
  const client = `c${id}`;
  const record = (event: Omit<HistoryEvent, 'client' | 'time'>): void => void history.push({ client, time: Date.now(), ...event });
  const { engine, seen } = workEngine(context.store, context.settings, clockOffsetMs, work);
  for (let call = 0; context.running(); call++) {
    const message = deliveries.take(Date.now());
    const keys: HeldKey[] = [{ key: `d|${message.id}`, mode: 'X' }];
    record({ type: 'invoke', op: 'acquire', keys, work: message.key });
    let answer: Grant | Queued | CompletedWork;
    try {
      answer = await engine.acquireWork({
        namespace: FAULTS_NAMESPACE,
        granularity: 'document',
        ids: [message.id],
        mode: 'exclusive',
        owner: client,
        ttlMs: TTL_MS,
        waitMs: Math.random() < 0.5 ? 0 : 1_500,
        idempotencyKey: message.key,
        // Half the consumers pass the message id as the requestId (redeliveries share it), half one of their own.
        requestId: Math.random() < 0.5 ? message.key : `${client}-${call}`,
      });
    } catch (error) {
      const type = outcomeOf(error);
      record({ type, op: 'acquire', error: (error as Error).name, work: message.key });
      if (type === 'info') tally.unknown++;
      if (error instanceof WorkInProgressError) work.inProgress++;
      else tally.conflicts++;
      deliveries.ended(message, false, Date.now());
      continue;
    }
    if ('status' in answer && answer.status === 'completed') {
      const lease = (answer.result as { lease?: string } | undefined)?.lease ?? '?';
      record({ type: 'ok', op: 'acquire', work: message.key, answered: { lease, recordedAt: answer.recordedAt, expiresAt: answer.expiresAt } });
      work.answered++;
      deliveries.ended(message, true, Date.now());
      continue;
    }
    if ('status' in answer) throw new Error(`acquireWork answered ${answer.status} without wake`);
    const grant = answer;
    work.runs++;
    tally.grants++;
    record({
      type: 'ok',
      op: 'acquire',
      leaseId: grant.leaseId,
      keys,
      fencingToken: grant.fencingToken,
      expiresAt: grant.expiresAt - clockOffsetMs,
      ...(clockOffsetMs !== 0 ? { clockOffsetMs } : {}),
      work: message.key,
    });
    await sleep(20 + Math.random() * 60);
    tally.cycles++;
    if (Math.random() < WORK_ONCE.crashRate) {
      work.crashed++;
      deliveries.ended(message, false, Date.now());
      continue;
    }
    const status = Math.random() < WORK_ONCE.failRate ? 'failed' : 'completed';
    record({ type: 'invoke', op: 'release', leaseId: grant.leaseId, work: message.key, record: { status, ttlMs: RECORD_TTL_MS } });
    seen.recordToken = undefined;
    const token = (): { recordToken?: string } => (seen.recordToken ? { recordToken: seen.recordToken } : {});
    try {
      const released = await engine.release({
        leaseToken: grant.leaseToken,
        record: { status, result: { lease: grant.leaseId, client }, ttlMs: RECORD_TTL_MS },
      });
      record({
        type: 'ok',
        op: 'release',
        leaseId: grant.leaseId,
        outcome: released.outcome,
        ...(released.recorded ? { recorded: released.recorded } : {}),
        ...token(),
      });
      if (released.recorded === 'completed') work.completed++;
      if (released.recorded === 'failed') work.failed++;
      deliveries.ended(message, released.recorded === 'completed', Date.now());
    } catch (error) {
      const type = error instanceof LeaseLostError ? 'fail' : outcomeOf(error);
      record({ type, op: 'release', leaseId: grant.leaseId, error: (error as Error).name, ...token() });
      if (error instanceof LeaseLostError) work.refused++;
      if (type === 'info') tally.unknown++;
      deliveries.ended(message, false, Date.now());
    }
  }
}

/** The operator: now and then revokes one of the documents, whoever holds it, as break glass. */
export async function runOperator(context: WorkContext, keys: number): Promise<void> {
  const { history, work } = context;
  const client = 'operator';
  const record = (event: Omit<HistoryEvent, 'client' | 'time'>): void => void history.push({ client, time: Date.now(), ...event });
  const engine = new LockService(context.store, context.settings);
  while (context.running()) {
    await sleep(between(WORK_ONCE.revokeEveryMs));
    if (!context.running()) break;
    const id = `k${Math.floor(Math.random() * keys)}`;
    const held: HeldKey[] = [{ key: `d|${id}`, mode: 'X' }];
    record({ type: 'invoke', op: 'revoke', keys: held });
    try {
      const revocation = await engine.revoke({
        namespace: FAULTS_NAMESPACE,
        granularity: 'document',
        ids: [id],
        reason: 'fault run: break glass under load',
        by: 'faults-operator',
      });
      const revoked = revocation.revoked.map((holder) => holder.leaseId);
      record({ type: 'ok', op: 'revoke', keys: held, revoked, ...(revocation.fencingToken ? { fencingToken: revocation.fencingToken } : {}) });
      work.revokes++;
      work.revokedHolders += revoked.length;
    } catch (error) {
      record({ type: outcomeOf(error), op: 'revoke', keys: held, error: (error as Error).name });
    }
  }
}
