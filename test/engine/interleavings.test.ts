/**
 * No interleaving of concurrent calls breaks the lock. Each schedule runs clients that acquire (all
 * three granularities, both modes, with and without requestIds, some waiting for a conflict to
 * clear, some delivered twice at once), work, renew (some only after their lease ran out), crash or
 * release, a thief that tries others' tokens with a wrong secret, a sweeper and primary promotions,
 * over one store whose copy falls behind now and then and answers some plain reads (and searches
 * below a tree path) with an old state, as the store contract allows; a seeded scheduler orders
 * every store call and pause, and some writes apply but lose their answer. Besides mutual
 * exclusion, fencing order and all-or-nothing, every grant and renewal must stand on the primary
 * when it is handed out (one that rests on a stale read does not).
 * Tree targets cover their ancestors in the checker's model (the engine writes only the path:
 * docs/tree-locks.md), so a lock on /r and one on /r/x/1 are judged on /r as X against IX; with
 * NESTING, every document and tree hold also covers the namespace's root (its global lock) in
 * intention mode. The store is the in-memory one (it passes the same contract as the Elasticsearch
 * store, test/store/): a real node cannot be made to take thousands of chosen orders a minute, nor
 * to lose an answer after applying a write, nor to answer from a chosen stale copy, on demand.
 * Everything else runs on the real node.
 *
 * The work workload (completion records, operations/work.ts) delivers a few messages, each naming
 * its work by an idempotency key, at least once: some twice at once, some again later (after the
 * record expired, or after a delivery crashed, paused past its lease or recorded `failed`). Besides
 * the lock's own checks, it asserts that two runs of one key's work never both complete while the
 * first record is unexpired, that a recorded result is never lost before its expiry (every later
 * acquire that reads it answers it, never a grant), and that only a lease that held the lock records.
 *
 * A failure prints its seed; replay it with INTERLEAVING_SEED=<seed> INTERLEAVING_RUNS=1 (the
 * engine's own jitter is seeded too). INTERLEAVING_WORK_RUNS=<n> sets the work workload's
 * schedules. INTERLEAVING_SURVEY=1 runs every schedule and counts the
 * violations by the circumstances of the holds involved, instead of stopping at the first;
 * INTERLEAVING_STALE_READS=<rate> and INTERLEAVING_NESTING=off override the two settings below.
 *
 * The forger (INTERLEAVING_ADVERSARY_RUNS schedules of each of the locks and work workloads, half with a
 * signing key) is an adversarial client: it holds a lock of its own and edits its token (its work
 * hash pointed at a message's work, its target or namespace changed, its lease id or hints pointed
 * at another holder's), keeping its secret and MAC; none of its renewals, releases or records may
 * change anything but its own lease, and with a signing key nothing at all (a token whose MAC fails is
 * refused whole).
 *
 * The revoke workload (INTERLEAVING_REVOKE_RUNS) is the locks workload with an operator that revokes
 * targets now and then: a revoked hold ends at the write that removed it, a renewal sent after that
 * must fail, the revoke's token is above every revoked one, and every later S or X grant on a revoked
 * key is above the revoke's.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it, vi } from 'vitest';
import { payloadHashOf } from '../../packages/client/src/wire/event-path.js';
import {
  LeaseLostError,
  LeaseTokenMismatchError,
  LockContentionError,
  LockHeldError,
  LockOutcomeUnknownError,
  StoreUnavailableError,
  WorkInProgressError,
  WorkPayloadMismatchError,
} from '../../packages/engine/src/errors.js';
import { compareFencingTokens } from '../../packages/engine/src/fencing.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import { MemoryLockStore } from '../../packages/engine/src/memory-store.js';
import type {
  CompletedWork,
  Grant,
  GrantedKey,
  HolderMode,
  LockTarget,
  RequestedMode,
  Revocation,
  StoredHolder,
  StoredWork,
  WorkStatus,
} from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { SettingsOverrides } from '../../packages/engine/src/settings.js';
import type { LockStore, StoredLock, WriteOp, WriteOutcome } from '../../packages/engine/src/store.js';
import type { WakeChannel, WakeDelivery, WakeMessage, WakeNotifier } from '../../packages/engine/src/wake.js';
import { workDocId, workKeyHash } from '../../packages/engine/src/work.js';
import { seededRandom } from '../../tools/shared/seeded-random.js';
import { type CopyEpisodes, Scheduler, type StaleAnswer, scheduledStore } from '../support/scheduler.js';

const RUNS = Number(process.env.INTERLEAVING_RUNS ?? 2_000);
/** Schedules of the queue workload (channel waiters, in-call waiters, a busy sweeper); INTERLEAVING_RUNS=1 replays one seed of either. */
const QUEUE_RUNS = Number(process.env.INTERLEAVING_QUEUE_RUNS ?? process.env.INTERLEAVING_RUNS ?? 1_000);
/** Schedules of the work workload (completion records); INTERLEAVING_RUNS=1 replays one seed of it too. */
const WORK_RUNS = Number(process.env.INTERLEAVING_WORK_RUNS ?? process.env.INTERLEAVING_RUNS ?? 500);
/** Schedules of the revoke workload (the locks workload with an operator revoking now and then). */
const REVOKE_RUNS = Number(process.env.INTERLEAVING_REVOKE_RUNS ?? process.env.INTERLEAVING_RUNS ?? 500);
/** Schedules of each of the locks and work workloads with the forger (an adversarial client), half of them with a signing key. */
const ADVERSARY_RUNS = Number(process.env.INTERLEAVING_ADVERSARY_RUNS ?? process.env.INTERLEAVING_RUNS ?? 60);
const FIRST_SEED = Number(process.env.INTERLEAVING_SEED ?? Math.floor(Math.random() * 1e9));
const SURVEY = process.env.INTERLEAVING_SURVEY !== undefined;
/** A survey prints a line of progress this often (schedules). */
const SURVEY_PROGRESS_EVERY = 5_000;
/** Schedules run with clocks beyond the skew bound, to show what breaks there. */
const BEYOND_RUNS = Number(process.env.INTERLEAVING_BEYOND_RUNS ?? 200);
/** Long enough for a survey of the schedules asked for (about 40 ms each on this machine kind). */
const SURVEY_TIMEOUT_MS = Math.max(300_000, Math.max(RUNS, QUEUE_RUNS, WORK_RUNS, REVOKE_RUNS) * 100);
/**
 * The share of plain reads (and searches below a tree path) that a lagging copy answers while it
 * lags, as the store contract allows (0: every answer comes from the primary, and no partitions).
 */
const STALE_READS = Number(process.env.INTERLEAVING_STALE_READS ?? 0.2);
/**
 * Granularities nest: the namespace's global lock is the root above its document ids and tree
 * paths, so a document or tree hold is an intention (IX, IS) on it and a global hold is X or S there.
 */
const NESTING = (process.env.INTERLEAVING_NESTING ?? 'on') === 'on';
/**
 * How the copy lags, counted in store calls: it falls behind after about 20 calls in step and heals
 * after about 30; most episodes trail the primary by 1-3 writes per document (the state just before
 * an attempt's rollback, a lease just before its renewal), the others are cut off and catch up now and then.
 */
const COPY_EPISODES: CopyEpisodes = { start: 0.05, heal: 0.03, trailingShare: 0.7, trailing: 3, catchUp: 0.05 };
const SKEW = 50;
/**
 * Every process reads its own clock: an offset from the scheduler's real time, drawn per actor from
 * the seed. Within the bound (the default), offsets lie in ±SKEW/2, so any two clocks differ by at
 * most SKEW, the engine's maxClockSkewMs; `beyond` spreads them over ±2.5 SKEW, where the guarantee no
 * longer holds (a test below shows what breaks). A holder acts until its expiry by its own clock, so
 * the checker ends its hold at that instant of real time.
 */
const CLOCKS = process.env.INTERLEAVING_CLOCKS ?? 'within';
const clockSpreadFor = (clocks: string): number => (clocks === 'beyond' ? 2.5 * SKEW : SKEW / 2);
const NAMESPACE = 'mix';
/** The root's key in the checker's model: the global lock's document. */
const ROOT = lockDocId(NAMESPACE, 'global', '*');

type TargetFields = { granularity: 'global' } | { granularity: 'document'; ids: string[] } | { granularity: 'tree'; path: string };
const TARGETS: TargetFields[] = [
  { granularity: 'document', ids: ['a'] },
  { granularity: 'document', ids: ['a', 'b'] },
  { granularity: 'document', ids: ['c', 'b'] },
  { granularity: 'tree', path: '/r' },
  { granularity: 'tree', path: '/r/x' },
  { granularity: 'tree', path: '/r/x/1' },
  { granularity: 'tree', path: '/r/y' },
  { granularity: 'global' },
];
/**
 * Each schedule draws one workload: every target, or only the document or only the tree ones, where
 * callers meet more often, so that attempts roll back, wait and try again, and others take a key in between.
 */
const WORKLOADS: ReadonlyArray<readonly TargetFields[]> = [
  TARGETS,
  TARGETS.filter((target) => target.granularity === 'document'),
  TARGETS.filter((target) => target.granularity === 'tree'),
];

/**
 * The work workload's messages take their lock on one of these (exclusively, as work does): a
 * document, two documents, a directory and a file below it, so that messages meet on a lock.
 */
const WORK_TARGETS: readonly TargetFields[] = [
  { granularity: 'document', ids: ['a'] },
  { granularity: 'document', ids: ['a', 'b'] },
  { granularity: 'tree', path: '/r/x' },
  { granularity: 'tree', path: '/r/x/1' },
];

/** The compatibility table of docs/model.md, written out again: the checker must not share the engine's copy. */
const MAY_SHARE: Record<HolderMode, readonly HolderMode[]> = { IS: ['IS', 'IX', 'S'], IX: ['IS', 'IX'], S: ['IS', 'S'], X: [] };
const compatible = (a: HolderMode, b: HolderMode): boolean => MAY_SHARE[a].includes(b);

const targetModeOf = (mode: RequestedMode): HolderMode => (mode === 'exclusive' ? 'X' : 'S');
const intentionOf = (mode: RequestedMode): HolderMode => (mode === 'exclusive' ? 'IX' : 'IS');

/**
 * What a hold covers, by the model rather than by what the engine writes: a tree lock on `/r/x`
 * holds `/r` in intention mode too (the engine never writes it there: docs/tree-locks.md), so two
 * tree holds conflict exactly when the table says their modes on a shared path do. With NESTING,
 * every document and tree hold also holds the root in intention mode (whatever the engine writes
 * there), so a global X conflicts with any of them and a global S with the exclusive ones. The
 * root's fencing token is the grant's (the largest of its keys): what a caller fences with.
 */
function coveredKeys(target: TargetFields, mode: RequestedMode, grant: Grant): Hold['keys'] {
  const fencingToken = grant.fencingToken;
  const root = NESTING && target.granularity !== 'global' ? [{ docId: ROOT, mode: intentionOf(mode), fencingToken }] : [];
  if (target.granularity !== 'tree') {
    return [
      ...root,
      ...grant.keys.map((key) => ({ docId: lockDocId(NAMESPACE, target.granularity, key.key), mode: key.mode, fencingToken: key.fencingToken })),
    ];
  }
  const segments = target.path.slice(1).split('/');
  const above = segments.slice(0, -1).map((_, index) => `/${segments.slice(0, index + 1).join('/')}`);
  return [
    ...root,
    ...above.map((ancestor) => ({ docId: lockDocId(NAMESPACE, 'tree', ancestor), mode: intentionOf(mode), fencingToken })),
    { docId: lockDocId(NAMESPACE, 'tree', target.path), mode: targetModeOf(mode), fencingToken },
  ];
}

/** What a caller may meet in a schedule with faults and contention, besides a conflict. */
const expectedTrouble = (error: unknown): boolean => error instanceof StoreUnavailableError || error instanceof LockContentionError;

interface Hold {
  owner: string;
  /** The grant's lease token (the thief copies its shape). */
  token: string;
  leaseId: string;
  granularity: TargetFields['granularity'];
  /** The grant's fencing token: which of two deliveries of one call took the other over. */
  fencingToken: string;
  keys: Array<{ docId: string; mode: HolderMode; fencingToken: string }>;
  /** The keys of the grant, as the engine named them (the documents it holds). */
  grantedKeys: readonly GrantedKey[];
  /** When the holder may act: from each grant or renewal it received until the expiry it was told, cut short by its release. */
  segments: Array<[number, number]>;
  /** The segments that came from a renewal sent after the lease had run out. */
  lateRenewals: Set<number>;
  /** The segments that came from a renewal to which a lagging copy showed this lease otherwise than the primary had it. */
  staleRenewals: Set<number>;
  /** How a lagging copy showed its acquire this lease otherwise than the primary had it (see Outcome.staleShown). */
  staleAcquire: ReadonlySet<StaleAnswer['kind']>;
  /** A renewal to which a lagging copy showed this lease otherwise than the primary had it ended in LeaseLostError. */
  staleLoss: boolean;
  /** The circumstances of its call: waited (waitMs > 0), delivered twice. */
  call: Call;
  /** The work workload: the message whose work this grant took on (acquireWork). */
  work?: string;
}

/** One call of a client: what every delivery of it asks for. */
interface Call {
  owner: string;
  target: TargetFields;
  mode: RequestedMode;
  ttlMs: number;
  waitMs: number;
  requestId?: string;
  deliveries: number;
}

interface Outcome {
  holds: Hold[];
  /** Calls that failed for sure (they must hold nothing), with their last error, and calls whose outcome is unknown. */
  failed: Map<string, string>;
  unknown: Set<string>;
  granted: Set<string>;
  problems: string[];
  /** Every call, by its owner. */
  calls: Map<string, Call>;
  /** Grants and renewals the primary did not back when they were handed out. */
  unbacked: Array<{ hold: Hold; text: string }>;
  /**
   * Per actor (one delivery of a call), since its current engine call began: the leases a lagging
   * copy showed it otherwise than the primary had them then, and how: a plain read (the lease absent
   * on the primary, or with another expiry), or a search below answered by the copy (its `self`
   * holds the lease, so the self-check passed, whether or not the copy had our latest write).
   */
  staleShown: Map<string, Map<string, Set<StaleAnswer['kind']>>>;
  /** Plain reads and searches a lagging copy answered while it lagged. */
  staleAnswers: number;
  /** The queue workload: its channel waiters, what broke their promises as it happened, and the tickets dropped by a write whose answer was lost. */
  waiters: Waiter[];
  queueProblems: string[];
  lostDrops: Set<string>;
  /** Tickets queued when the operator re-created the lock index (forced): their waiters are told by their channel's own timeout. */
  droppedByRecreation: Set<string>;
  /** The operator's steps: forced re-creations (they drop every holder) and adoptions of a restored copy (they keep them). */
  recreations: number;
  adoptions: number;
  /** The work workload's log (undefined in the others). */
  work?: WorkLog;
  /**
   * The revoke workload: when the operator's revoke removed each lease (the instant of the write that
   * did, per lease: its hold ends there), and each revoke that answered, with when it was called and
   * when it answered.
   */
  revokedAt: Map<string, number>;
  revocations: Array<{ revocation: Revocation; startedAt: number; answeredAt: number }>;
}

/**
 * A message of the work workload: its work is named by an idempotency key (or, `byRequestId`, by
 * the requestId its deliveries share: `idempotencyKey: true`). `sameCaller`: every delivery is the
 * same call again (one owner and requestId), so a later one takes an earlier one's grant over.
 */
interface Message {
  name: string;
  target: TargetFields;
  key: string;
  byRequestId: boolean;
  sameCaller: boolean;
  /** How many times it is delivered (each delivery is an actor of its own). */
  deliveries: number;
  /** The work's document (packages/engine/src/work.ts), to know its writes and reads. */
  docId: string;
  /**
   * Its last delivery carries another payload (a key reused upstream): it must never be answered the
   * result of the others' payload, nor run while their record is kept. Messages of several deliveries
   * that are not one call again.
   */
  otherPayloadLast: boolean;
}

/** One acquireWork call, on the simulation's true time: when it started, first read the work's document, and answered. */
interface WorkCall {
  message: string;
  owner: string;
  startedAt: number;
  readAt?: number;
  answeredAt?: number;
  answer?: { kind: 'grant'; leaseId: string } | { kind: 'completed'; answer: CompletedWork } | { kind: 'error'; error: string };
}

/** One release that asked to record an outcome (a retry after an error is another). */
interface RecordTry {
  message: string;
  owner: string;
  leaseId: string;
  status: WorkStatus;
  result: unknown;
  sentAt: number;
  /** The primary, when it was sent: the lease held every key of its lock, unexpired by the sender's clock. */
  heldAtSend: boolean;
  /** An outcome of this lease was on the primary already when it was sent (a retry whose first answer was lost). */
  recordedBefore: boolean;
  answer?: WorkStatus | 'not recorded' | 'trouble';
  answeredAt?: number;
}

/** An outcome as the primary applied it (whatever its writer heard), with its expiry on true time. */
interface AppliedRecord {
  message: string;
  lease: string;
  owner: string;
  status: WorkStatus;
  result: unknown;
  fencingToken: string;
  at: number;
  expiresAt: number;
  /** Until when every process sees it unexpired: its expiry by its recorder's clock, less the skew bound, on true time. */
  keptUntil: number;
  /** When it left the primary (replaced, or deleted by the sweeper), and how. */
  gone?: { at: number; how: string };
}

interface WorkLog {
  messages: Message[];
  calls: WorkCall[];
  records: RecordTry[];
  applied: AppliedRecord[];
  /** What broke as it happened: a completed record taken off the primary, or a second one applied, before the first's expiry. */
  problems: string[];
  /** The payload hash each delivery (by owner) sent. */
  payloads: Map<string, string>;
  figures: { runs: number; paused: number; crashed: number; renewed: number };
}

/**
 * A waiter woken by a channel (acquireOrQueue with `wake`). Its channel is a Step Functions task
 * (a token: once a message reached it, or once it expired, the channel answers `gone`) or an SQS
 * queue (every message that goes out reaches it). The simulation's notifier decides each delivery:
 * delivered, delivered twice (an at-least-once queue), thrown before the message went out (lost:
 * the releaser crashed between its write and the wake-up), or thrown after it went out. A wake-up is
 * a hint: the waiter claims with the same acquire again, without `wake`, and only that answer is a
 * grant; a waiter that got the message twice may claim twice, at once (two deliveries of one call).
 */
interface Waiter {
  owner: string;
  channel: WakeChannel;
  call: Call;
  /** Never acts on what it is told (a waiter that died, with a short queueTtlMs): its ticket runs out, its reservation lapses. */
  dies: boolean;
  /** Its channel answers `gone` from this instant (a task token that expired); Infinity: never. */
  goneAt: number;
  /** What acquireOrQueue answered (`granted` would break the protocol: a call with `wake` never grants). */
  answer?: 'granted' | 'queued' | 'failed';
  ticket?: string;
  /** Every notify call for it: the outcome told, and how the call ended (undefined while in flight). */
  told: Array<{ outcome: WakeMessage['outcome']; at: number; result?: WakeDelivery | 'thrown' }>;
  /** The messages that reached it, in arrival order. */
  inbox: WakeMessage[];
  /** Its claims that were granted. */
  claimed: Hold[];
}

/** A store whose applied writes are watched: `onRemoved` hears of every holder a write took off a document, with the instant. */
class WatchedStore extends MemoryLockStore {
  /** `ops`: the request that removed it. */
  onRemoved?: (holder: StoredHolder, docId: string, ops: readonly WriteOp[]) => void;
  /** A ticket left a document's queue: `granted` when it became a holder there. */
  onTicketLeft?: (ticket: string, docId: string, granted: boolean) => void;
  /** A write changed a work document (created, replaced or deleted it): its work before and after. */
  onWork?: (docId: string, before: StoredWork | undefined, after: StoredWork | undefined) => void;
  /** Every write request, with the documents it names before and after it. */
  onApplied?: (ops: readonly WriteOp[], before: Map<string, StoredLock | null>, after: Map<string, StoredLock | null>) => void;

  override async write(ops: readonly WriteOp[]): Promise<WriteOutcome[]> {
    if (!this.onRemoved && !this.onTicketLeft && !this.onWork && !this.onApplied) return super.write(ops);
    const docIds = [...new Set(ops.map((op) => op.docId))];
    const before = await super.read(docIds);
    const outcomes = await super.write(ops);
    const after = await super.read(docIds);
    this.onApplied?.(ops, before, after);
    for (const docId of docIds) {
      const remaining = new Set((after.get(docId)?.body.holders ?? []).map((holder) => holder.lease));
      for (const holder of before.get(docId)?.body.holders ?? []) if (!remaining.has(holder.lease)) this.onRemoved?.(holder, docId, ops);
      const queued = new Set((after.get(docId)?.body.queue ?? []).map((ticket) => ticket.ticket));
      for (const ticket of before.get(docId)?.body.queue ?? []) {
        if (!queued.has(ticket.ticket)) this.onTicketLeft?.(ticket.ticket, docId, remaining.has(ticket.ticket));
      }
      const [was, is] = [before.get(docId), after.get(docId)];
      if ((was?.body.work || is?.body.work) && was?.seqNo !== is?.seqNo) this.onWork?.(docId, was?.body.work, is?.body.work);
    }
    return outcomes;
  }
}

/** The store with every write's ops noted in `marked` (the same op objects reach the store below). */
function markingWrites(store: LockStore, marked: WeakSet<WriteOp>): LockStore {
  const mark = (ops: readonly WriteOp[]): readonly WriteOp[] => {
    for (const op of ops) marked.add(op);
    return ops;
  };
  return Object.assign(Object.create(store) as LockStore, {
    write: (ops: readonly WriteOp[]) => store.write(mark(ops)),
    writeThenRead: (ops: readonly WriteOp[], docIds: readonly string[]) => store.writeThenRead(mark(ops), docIds),
  });
}

/** Who is running (a client's delivery, the thief, ...): the trace names it on each step. */
const actors = new AsyncLocalStorage<string>();

/** The store as the engine sees it, noting the tickets dropped by a write whose answer was lost: nobody hears of that write's effects. */
function notingLostDrops(store: LockStore, lostDrops: Set<string>): LockStore {
  const noting = (ops: readonly WriteOp[], error: unknown): never => {
    if (error instanceof StoreUnavailableError && error.context.ambiguous) {
      for (const op of ops) {
        for (const ticket of op.queueEffects?.dropped ?? []) lostDrops.add(ticket.ticket);
      }
    }
    throw error;
  };
  return {
    ...store,
    write: (ops) => store.write(ops).catch((error: unknown) => noting(ops, error)),
    writeThenRead: (ops, ids) => store.writeThenRead(ops, ids).catch((error: unknown) => noting(ops, error)),
  };
}

/**
 * One schedule. `queue`: the queue workload: fewer clients, channel waiters (some that die, some
 * whose task token expires), a sweeper that runs often (it hands over, tells again, tells the lost),
 * and at the end the clock moved past every ticket and lease and the sweeper run a few times more.
 * `work`: the work workload: deliveries of a few messages whose work runs once (acquireWork, and a
 * release that records the outcome), one plain client, a sweeper that runs often (it deletes
 * records and claims that ended), the thief (who also tries to record) and a primary promotion.
 */
async function runSchedule(
  seed: number,
  kind: 'locks' | 'queue' | 'work' | 'revoke' = 'locks',
  clocks = CLOCKS,
  /** With the forger (an adversarial client: forger()), in the locks and work workloads. */
  adversary = false,
): Promise<{ outcome: Outcome; store: MemoryLockStore; scheduler: Scheduler }> {
  const queue = kind === 'queue';
  const withWork = kind === 'work';
  const revoking = kind === 'revoke';
  const scheduler = new Scheduler(seed);
  const clockDraw = seededRandom(seed ^ 0x2545f491);
  const offsets = new Map<string, number>();
  const spread = clockSpreadFor(clocks);
  /** The running actor's clock offset (a delivery, a claim and the sweeper each run their own process). */
  const offset = (): number => {
    const actor = actors.getStore() ?? '';
    const known = offsets.get(actor);
    if (known !== undefined) return known;
    const drawn = (clockDraw() * 2 - 1) * spread;
    offsets.set(actor, drawn);
    return drawn;
  };
  /** When a holder stops acting, in real time: its expiry by its own clock. */
  const realEnd = (expiresAt: number): number => expiresAt - offset();
  scheduler.actor = () => actors.getStore();
  // A replay of one seed shows every step.
  if (RUNS === 1 || (withWork && WORK_RUNS === 1) || (revoking && REVOKE_RUNS === 1)) scheduler.traceLength = Number.POSITIVE_INFINITY;
  const memory = new WatchedStore();
  const outcome: Outcome = {
    holds: [],
    failed: new Map(),
    unknown: new Set(),
    granted: new Set(),
    problems: [],
    calls: new Map(),
    unbacked: [],
    staleShown: new Map(),
    staleAnswers: 0,
    waiters: [],
    queueProblems: [],
    lostDrops: new Set(),
    droppedByRecreation: new Set(),
    recreations: 0,
    adoptions: 0,
    revokedAt: new Map(),
    revocations: [],
  };
  /** The operator's own writes (the revoke's, and its best-effort removals elsewhere): only they end a hold by revoking it. */
  const operatorOps = new WeakSet<WriteOp>();
  if (revoking) {
    // A revoked holder takes with it the earlier deliveries of its call it would have given the key back to (its notes).
    memory.onRemoved = (holder, _, ops) => {
      if (!ops.some((op) => operatorOps.has(op))) return;
      for (let gone: StoredHolder | null | undefined = holder; gone; gone = gone.restores) {
        if (!outcome.revokedAt.has(gone.lease)) outcome.revokedAt.set(gone.lease, scheduler.now);
      }
    };
  }
  const expiryOf = (lock: StoredLock | null | undefined, lease: string): number | undefined =>
    lock?.body.holders.find((holder) => holder.lease === lease)?.expiresAt;
  /** Starts watching what a lagging copy shows the running actor; the answer: how it showed it `lease` otherwise than the primary. */
  const watchStale = (): ((lease: string) => ReadonlySet<StaleAnswer['kind']>) => {
    const actor = actors.getStore() ?? '';
    const shown = new Map<string, Set<StaleAnswer['kind']>>();
    outcome.staleShown.set(actor, shown);
    return (lease) => shown.get(lease) ?? new Set();
  };
  const store = scheduledStore(memory, scheduler, {
    lostAnswers: 0.04,
    unavailable: 0.02,
    staleReads: STALE_READS,
    ...(STALE_READS > 0 ? { copyEpisodes: COPY_EPISODES } : {}),
    onStaleAnswer: ({ kind, seen, primary, asker }) => {
      outcome.staleAnswers++;
      const shown = outcome.staleShown.get(asker ?? '');
      for (const [docId, lock] of seen) {
        const current = primary.get(docId);
        for (const holder of lock?.body.holders ?? []) {
          // A search counts whenever the copy answered it: its self may be current while a lock below is not.
          const differs = kind === 'search' || expiryOf(current, holder.lease) !== holder.expiresAt;
          if (!differs || !shown) continue;
          const how = shown.get(holder.lease) ?? new Set();
          shown.set(holder.lease, how.add(kind));
        }
      }
    },
  });
  const waiters = new Map<string, Waiter>();
  /** The work workload: the acquireWork call each delivery has in flight (its first read of the work's document is noted), and who each lease is. */
  const workCalls = new Map<string, [WorkCall, string]>();
  const leaseActors = new Map<string, string>();
  if (withWork) outcome.work = watchWork();
  const settings: SettingsOverrides = {
    ...(queue
      ? {
          notifier: simulatedNotifier(),
          queue: {
            rewakeAfterMs: 100,
            claimWindowMs: 150,
            pollMs: { minMs: 5, maxMs: 40 },
            retryBlockedMs: 50,
            ticketTtlMs: { defaultMs: 600, maxMs: 10_000 },
          },
        }
      : {}),
    now: () => scheduler.now + offset(),
    sleep: scheduler.sleep,
    maxClockSkewMs: SKEW,
    ttl: { minMs: 1, defaultMs: 300, maxMs: 10_000 },
    contentionBudgetMs: 150,
    retry: { baseDelayMs: 5, maxDelayMs: 40 },
    maxRetryAfterMs: 40,
    ...(seed % 2 === 0 ? { tokenSigningKey: Buffer.alloc(32, 5) } : {}),
    // Records short enough to expire inside a schedule.
    ...(withWork ? { work: { recordTtlMs: { defaultMs: 300, minMs: 1, maxMs: 10_000 } } } : {}),
  };
  const engine = new LockService(queue ? notingLostDrops(store, outcome.lostDrops) : withWork ? notingWorkReads(store) : store, settings);
  /** The operator's engine: the same store, its writes marked. */
  const operatorEngine = revoking ? new LockService(markingWrites(store, operatorOps), settings) : engine;
  /** The forger's engine for its forged tokens: the same store, its writes marked (forger() says what they may do). */
  const forgedOps = new WeakSet<WriteOp>();
  const forgerEngine = adversary ? new LockService(markingWrites(store, forgedOps), settings) : engine;
  let forgerLease: string | undefined;
  if (adversary) {
    memory.onApplied = (ops, before, after) => {
      if (!ops.some((op) => forgedOps.has(op))) return;
      for (const [docId, was] of before) {
        const is = after.get(docId) ?? null;
        if (was?.seqNo === is?.seqNo && was?.index === is?.index) continue;
        if (settings.tokenSigningKey) {
          outcome.problems.push(`a forged token changed ${docId}: with a signing key, a token whose MAC fails is refused whole`);
          continue;
        }
        const others = (lock: StoredLock | null): string =>
          JSON.stringify((lock?.body.holders ?? []).filter((holder) => holder.lease !== forgerLease).map((holder) => [holder.lease, holder.expiresAt]));
        if (others(was) !== others(is)) outcome.problems.push(`a forged token changed another lease's hold on ${docId}`);
        if (JSON.stringify(was?.body.work) !== JSON.stringify(is?.body.work)) outcome.problems.push(`a forged token changed the work on ${docId}`);
      }
    };
  }

  const workload = scheduler.pick(WORKLOADS);

  function nextCall(owner: string): Call {
    const target = scheduler.pick(workload);
    const mode = scheduler.pick(['exclusive', 'shared'] as const);
    const ttlMs = 100 + Math.floor(scheduler.random() * 300);
    const requestId = scheduler.chance(0.5) ? `req-${owner}` : undefined;
    // Waiting callers retry whole attempts after a conflict: an attempt that rolled back is followed by another.
    const waitMs = scheduler.chance(0.6) ? 100 + Math.floor(scheduler.random() * 300) : 0;
    // A call with a requestId may be delivered twice at once (an at-least-once queue, a client's retry racing its first try).
    const deliveries = requestId && scheduler.chance(0.3) ? 2 : 1;
    const call: Call = { owner, target, mode, ttlMs, waitMs, deliveries, ...(requestId ? { requestId } : {}) };
    outcome.calls.set(owner, call);
    return call;
  }

  async function acquireOnce(call: Call): Promise<Hold | undefined> {
    const { owner, target, mode, ttlMs, waitMs, requestId } = call;
    for (let attempt = 0; attempt < 2; attempt++) {
      const misled = watchStale();
      try {
        const grant = await engine.acquire({ namespace: NAMESPACE, ...target, mode, owner, ttlMs, waitMs, ...(requestId ? { requestId } : {}) });
        return await holdFor(call, grant, misled);
      } catch (error) {
        if (error instanceof LockOutcomeUnknownError) outcome.unknown.add(owner);
        else outcome.failed.set(owner, (error as Error).message);
        // Only a retry with the requestId can claim what an unknown outcome may hold.
        const retryable = error instanceof LockOutcomeUnknownError || error instanceof StoreUnavailableError;
        if (!(retryable && requestId)) return undefined;
      }
    }
    return undefined;
  }

  /** A grant handed out to `call`: a hold from now until its expiry by the holder's clock, backed on the primary. */
  async function holdFor(call: Call, grant: Grant, misled: (lease: string) => ReadonlySet<StaleAnswer['kind']>, work?: string): Promise<Hold> {
    outcome.granted.add(call.owner);
    outcome.failed.delete(call.owner);
    const hold: Hold = {
      owner: call.owner,
      token: grant.leaseToken,
      leaseId: grant.leaseId,
      granularity: call.target.granularity,
      fencingToken: grant.fencingToken,
      keys: coveredKeys(call.target, call.mode, grant),
      grantedKeys: grant.keys,
      segments: [[scheduler.now, realEnd(grant.expiresAt)]],
      lateRenewals: new Set(),
      staleRenewals: new Set(),
      staleAcquire: misled(grant.leaseId),
      staleLoss: false,
      call,
      ...(work !== undefined ? { work } : {}),
    };
    outcome.holds.push(hold);
    await checkBacked(hold, grant.keys, grant.expiresAt, 'grant');
    return hold;
  }

  /**
   * A grant or renewal must stand on the primary when it is handed out (no other step runs between
   * the engine's last store call and here): every document it names holds the lease there, at least
   * until the expiry told. Only another delivery of the same call may have taken it over meanwhile
   * (its holder then stands there: the same owner and requestId). This catches a grant that rests on
   * a stale read at once, whether or not a conflicting lock comes along while it is held.
   */
  async function checkBacked(hold: Hold, keys: readonly GrantedKey[], expiresAt: number, what: 'grant' | 'renewal'): Promise<void> {
    // One that is over already (a renewal that came back too late) holds nothing to back.
    if (expiresAt <= scheduler.now + offset()) return;
    // Revoked by the operator while its call was under way: either the call took the key again after
    // (the grant stands on that write: the revoke ended nothing it was told of), or the answer names
    // a key already revoked, as if revoked just after the answer (docs/protocol.md, T12).
    if (outcome.revokedAt.has(hold.leaseId)) {
      if (what === 'renewal' || !(await heldOnPrimary(hold))) return;
      outcome.revokedAt.delete(hold.leaseId);
    }
    // One granted in an incarnation the operator has since re-created (forced): every holder went with
    // it, as documented; the new incarnation's larger tokens fence it off (the fencing order check).
    if (epochOf(hold.fencingToken) < BigInt(outcome.recreations + outcome.adoptions) && outcome.recreations > 0) return;
    const docIds = keys.map((key) => lockDocId(NAMESPACE, hold.granularity, key.key));
    const primary = await memory.read(docIds);
    for (const docId of docIds) {
      const holders = primary.get(docId)?.body.holders ?? [];
      const ours = holders.find((holder) => holder.lease === hold.leaseId);
      const takenOver = holders.some((holder) => holder.lease !== hold.leaseId && holder.owner === hold.owner && holder.request !== null);
      if ((ours && ours.expiresAt >= expiresAt) || takenOver) continue;
      const there = holders.map((holder) => `${holder.owner} ${holder.mode} until ${holder.expiresAt}`).join(', ') || 'nobody';
      outcome.unbacked.push({ hold, text: `unbacked ${what}: ${hold.owner}'s ${what} until ${expiresAt} names ${docId}, where the primary has ${there}` });
    }
  }

  /** One delivery of a call: acquire, work and renew, then release or crash. */
  async function deliver(call: Call): Promise<void> {
    const hold = await acquireOnce(call);
    if (!hold) return;
    let leaseToken = hold.token;
    const cut = (at: number): void => {
      for (const segment of hold.segments) segment[1] = Math.min(segment[1], at);
    };
    let lost = false;
    for (let step = Math.floor(scheduler.random() * 3); step > 0 && !lost; step--) {
      // Some renewals come only after the lease ran out (a paused process): a lock above or below (a
      // tree lock, a global one) may have been granted meanwhile without touching its documents.
      const runOutAt = hold.segments.at(-1)![1];
      const late = scheduler.chance(0.25);
      await scheduler.sleep(late ? Math.max(0, runOutAt - scheduler.now) + scheduler.random() * 80 : scheduler.random() * 150);
      if (!late && !scheduler.chance(0.6)) continue;
      const sentLate = scheduler.now >= runOutAt;
      const misled = watchStale();
      const sentAt = scheduler.now;
      try {
        const renewal = await engine.renew({ leaseToken, ttlMs: call.ttlMs });
        const revokedAt = outcome.revokedAt.get(hold.leaseId);
        if (revokedAt !== undefined && revokedAt <= sentAt)
          outcome.problems.push(`a revoked holder renewed: ${call.owner}, revoked at ${revokedAt}, renewed from ${sentAt}`);
        leaseToken = renewal.leaseToken;
        if (sentLate) hold.lateRenewals.add(hold.segments.length);
        if (misled(hold.leaseId).size > 0) hold.staleRenewals.add(hold.segments.length);
        hold.segments.push([scheduler.now, realEnd(renewal.expiresAt)]);
        await checkBacked(hold, hold.grantedKeys, renewal.expiresAt, 'renewal');
      } catch (error) {
        // Told that it lost the lease, a holder stops acting at once.
        if (error instanceof LeaseLostError) {
          lost = true;
          hold.staleLoss ||= misled(hold.leaseId).size > 0;
          cut(scheduler.now);
        } else if (!expectedTrouble(error)) outcome.problems.push(`renew of ${call.owner} failed unexpectedly: ${String(error)}`);
      }
    }
    if (scheduler.chance(0.15)) return; // crashed: the lease runs out on its own
    cut(scheduler.now);
    await engine.release({ leaseToken }).catch((error: unknown) => {
      if (!expectedTrouble(error)) outcome.problems.push(`release of ${call.owner} failed unexpectedly: ${String(error)}`);
    });
  }

  async function client(id: number): Promise<void> {
    for (let index = 0; index < 3; index++) {
      const call = nextCall(`c${id}-${index}`);
      const named = (delivery: number): Promise<void> => actors.run(call.deliveries === 1 ? call.owner : `${call.owner}#${delivery}`, () => deliver(call));
      if (call.deliveries === 1) await named(1);
      else await Promise.all([named(1), scheduler.sleep(scheduler.random() * 30).then(() => named(2))]);
    }
  }

  async function thief(): Promise<void> {
    for (let tries = 0; tries < 3; tries++) {
      await scheduler.sleep(scheduler.random() * 300);
      if (outcome.holds.length === 0) continue;
      // The thief knows the victim's lease (its id, its target, even the signed note), not its secret.
      const victim = scheduler.pick(outcome.holds);
      const [prefix, payload, , mac] = victim.token.split('.');
      const forged = [prefix, payload, 'Z'.repeat(43), ...(mac ? [mac] : [])].join('.');
      const renewed = await engine.renew({ leaseToken: forged }).then(
        () => 'renewed',
        (error: unknown) =>
          error instanceof LeaseTokenMismatchError || error instanceof LeaseLostError || error instanceof StoreUnavailableError ? 'refused' : String(error),
      );
      const released = await engine.release({ leaseToken: forged }).then(
        (result) => (result.outcome === 'not_held' ? 'refused' : result.outcome),
        (error: unknown) => (error instanceof LeaseTokenMismatchError || error instanceof StoreUnavailableError ? 'refused' : String(error)),
      );
      if (renewed !== 'refused' || released !== 'refused')
        outcome.problems.push(`a wrong secret was accepted for ${victim.owner}: renew ${renewed}, release ${released}`);
      // With work, the thief also tries to record an outcome of its own: an answer `recorded` may only repeat the victim's own record.
      if (withWork && victim.work !== undefined) {
        const recorded = await engine.release({ leaseToken: forged, record: { status: 'completed', result: 'forged', ttlMs: 200 } }).then(
          (result) => (outcome.work!.applied.some((record) => record.lease === victim.leaseId) ? 'refused' : `recorded ${result.recorded}`),
          (error: unknown) =>
            error instanceof LeaseTokenMismatchError || error instanceof LeaseLostError || expectedTrouble(error) ? 'refused' : String(error),
        );
        if (recorded !== 'refused') outcome.problems.push(`a wrong secret recorded an outcome for ${victim.owner}: ${recorded}`);
      }
    }
  }

  /**
   * An adversarial client: it takes a lock of its own (a plain one, exclusive), then edits its own
   * token, keeping its secret and (with a signing key) its MAC, which then fails: its `w` pointed at a
   * message's work, its target moved to another target or another namespace, its lease id changed to
   * another holder's, its hints pointed at another holder's document (with that document's current
   * seq_no, as if it could read the index). With each, it renews, releases and records. Nothing may
   * come of it: with a signing key every such call is refused whole and writes nothing; without one
   * (the payload is not authenticated then), it may renew or release its own lease, and nothing else:
   * no other lease's hold changes and no work is recorded. Then it releases its lease with its real token.
   */
  async function forger(): Promise<void> {
    await scheduler.sleep(scheduler.random() * 100);
    // A key of its own, in the namespace of the others: it holds it for sure (the store may fail, so it tries a few times).
    const target: TargetFields = { granularity: 'document', ids: ['forger'] };
    // A long lease: it is still its own while it tries every forgery.
    const call: Call = { owner: 'forger', target, mode: 'exclusive', ttlMs: 5_000, waitMs: 200, deliveries: 1 };
    outcome.calls.set(call.owner, call);
    let hold: Hold | undefined;
    for (let attempt = 0; attempt < 4 && !hold; attempt++) hold = await acquireOnce(call);
    if (!hold) return;
    forgerLease = hold.leaseId;
    const [prefix, encoded, secret, mac] = hold.token.split('.') as [string, string, string, string | undefined];
    const payload = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forge = (edit: Record<string, unknown>): string =>
      [prefix, Buffer.from(JSON.stringify({ ...payload, ...edit })).toString('base64url'), secret, ...(mac ? [mac] : [])].join('.');
    const payloadTarget = (fields: TargetFields): Record<string, unknown> => ({
      g: fields.granularity,
      k: fields.granularity === 'document' ? fields.ids : fields.granularity === 'tree' ? fields.path : undefined,
    });
    const forgeries: Array<{ what: string; token: string; work?: boolean }> = [];
    // Work nobody has taken on yet (no document: the record would create it), and each message's work.
    const unsent = workKeyHash({ namespace: NAMESPACE, ...target } as LockTarget, 'not-delivered-yet');
    forgeries.push({ what: 'w pointed at work not delivered yet', token: forge({ w: unsent }), work: true });
    for (const message of outcome.work?.messages ?? []) {
      const keyHash = workKeyHash({ namespace: NAMESPACE, ...message.target } as LockTarget, message.key);
      forgeries.push({ what: `w pointed at ${message.name}'s work`, token: forge({ w: keyHash }), work: true });
      forgeries.push({ what: `w and target pointed at ${message.name}'s`, token: forge({ w: keyHash, ...payloadTarget(message.target) }), work: true });
    }
    const victim = outcome.holds.find((other) => other.owner !== 'forger' && other.segments.some(([start, end]) => start < end));
    if (victim) {
      const docId = lockDocId(NAMESPACE, victim.granularity, victim.grantedKeys[0]!.key);
      const lock = (await memory.read([docId])).get(docId);
      forgeries.push({ what: `target moved to ${victim.owner}'s`, token: forge(payloadTarget(victim.call.target)) });
      forgeries.push({ what: `lease id changed to ${victim.owner}'s`, token: forge({ l: victim.leaseId, ...payloadTarget(victim.call.target) }) });
      if (lock) {
        forgeries.push({
          what: `hints pointed at ${victim.owner}'s document`,
          token: forge({ ...payloadTarget(victim.call.target), h: [[docId, lock.primaryTerm, lock.seqNo, 1, lock.index]] }),
        });
      }
    }
    forgeries.push({ what: 'namespace changed', token: forge({ n: `${NAMESPACE}-other` }) });
    // From here on it only forges (one of its forgeries may release its own lease): its hold ends.
    for (const segment of hold.segments) segment[1] = Math.min(segment[1], scheduler.now);
    for (const { what, token, work } of forgeries) {
      await scheduler.sleep(scheduler.random() * 5);
      // The record first: without a signing key, a release of its own lease (a token edited only in `w`) ends the lease.
      const tries: Array<[string, () => Promise<unknown>]> = [
        ...(work
          ? [
              ['record', () => forgerEngine.release({ leaseToken: token, record: { status: 'completed', result: 'forged', ttlMs: 1_000 } })] as [
                string,
                () => Promise<unknown>,
              ],
            ]
          : []),
        ['renew', () => forgerEngine.renew({ leaseToken: token, ttlMs: 5_000 })],
        ['release', () => forgerEngine.release({ leaseToken: token })],
      ];
      for (const [name, attempt] of tries) {
        const answer = await attempt().then(
          (answered) => answered as { leaseId?: string; outcome?: string; recorded?: string },
          () => undefined,
        );
        if (!answer) continue;
        if (settings.tokenSigningKey && answer.outcome !== 'not_held')
          outcome.problems.push(`a forged token (${what}) was answered by ${name}: ${JSON.stringify(answer)}`);
        if (answer.recorded !== undefined) outcome.problems.push(`a forged token (${what}) recorded ${answer.recorded}`);
        if (answer.leaseId !== undefined && answer.leaseId !== hold.leaseId && answer.outcome !== 'not_held') {
          outcome.problems.push(`a forged token (${what}) was answered by ${name} for lease ${answer.leaseId}: ${JSON.stringify(answer)}`);
        }
      }
    }
    await engine.release({ leaseToken: hold.token }).catch(() => undefined);
  }

  /**
   * The operator's break glass, in the revoke workload: revokes a target of the workload now and then,
   * with calls in flight. Its write must land above every revoked holder's token.
   */
  async function revoker(): Promise<void> {
    for (let tries = 0; tries < 2; tries++) {
      await scheduler.sleep(scheduler.random() * 400);
      const target = scheduler.pick(workload);
      const startedAt = scheduler.now;
      try {
        const revocation = await operatorEngine.revoke({ namespace: NAMESPACE, ...target, reason: 'simulated', by: 'operator' });
        outcome.revocations.push({ revocation, startedAt, answeredAt: scheduler.now });
        for (const revoked of revocation.revoked) {
          if (revocation.fencingToken === null || compareFencingTokens(revocation.fencingToken, revoked.fencingToken) <= 0)
            outcome.problems.push(
              `revoke's token ${revocation.fencingToken} is not above the revoked ${revoked.owner}'s ${revoked.fencingToken} on ${revoked.key}`,
            );
        }
      } catch (error) {
        if (!expectedTrouble(error)) outcome.problems.push(`revoke failed unexpectedly: ${String(error)}`);
      }
    }
  }

  async function sweeper(): Promise<void> {
    for (let runs = 0; runs < 2; runs++) {
      await scheduler.sleep(scheduler.random() * 400);
      await engine.sweep({ batchSize: 3, maxBatches: 2 }).catch(() => undefined);
    }
  }

  async function failover(): Promise<void> {
    await scheduler.sleep(scheduler.random() * 500);
    await scheduler.schedule('promote primary', async () => memory.promotePrimary());
  }

  /**
   * The operator's documented steps (docs/lock-index.md), with calls in flight, in some schedules: the
   * next incarnation of the lock index made anew (forced: every holder and ticket goes with the old
   * one), or a restored copy adopted as the next incarnation (holders and tickets carry on). Either
   * way the new incarnation's tokens are larger, and writes decided on the old one do not apply.
   */
  async function operator(): Promise<void> {
    const step = scheduler.random();
    if (step > 0.2) return;
    await scheduler.sleep(scheduler.random() * 600);
    if (step < 0.1) {
      await scheduler.schedule('operator re-creates the lock index (forced)', async () => {
        for (const lock of memory.snapshot()) for (const ticket of lock.body.queue ?? []) outcome.droppedByRecreation.add(ticket.ticket);
        outcome.recreations++;
        memory.recreate();
      });
    } else {
      await scheduler.schedule('operator adopts a restored copy as the next incarnation', async () => {
        outcome.adoptions++;
        memory.adoptAsNextIncarnation();
      });
    }
  }

  /** The channel a waiter is known by: the simulation's notifier finds the waiter from it. */
  const channelKey = (channel: WakeChannel): string =>
    channel.kind === 'task' ? channel.taskToken : channel.kind === 'queue' ? channel.queueUrl : channel.eventBusName;
  /** Nobody waits on the channel any more: its token expired, or (a task) a message reached it already. */
  const gone = (waiter: Waiter): boolean => scheduler.now >= waiter.goneAt || (waiter.channel.kind === 'task' && waiter.inbox.length > 0);

  function simulatedNotifier(): WakeNotifier {
    return {
      notify(channel, message) {
        const waiter = waiters.get(channelKey(channel));
        if (!waiter) {
          outcome.queueProblems.push(`told ${message.outcome} on a channel nobody opened: ${JSON.stringify(channel)}`);
          return Promise.resolve('gone');
        }
        const told: Waiter['told'][number] = { outcome: message.outcome, at: scheduler.now };
        waiter.told.push(told);
        if (message.outcome === 'ready' && waiter.ticket !== undefined && message.ticket !== waiter.ticket) {
          outcome.queueProblems.push(`${waiter.owner} was woken for ticket ${message.ticket}, not its own ${waiter.ticket}`);
        }
        return scheduler.schedule(`notify ${waiter.owner} ${message.outcome}`, async () => {
          if (gone(waiter)) {
            told.result = 'gone';
            return 'gone';
          }
          const fate = scheduler.random();
          if (fate < 0.12) {
            told.result = 'thrown';
            throw new Error('the notifier crashed before the message went out (scheduled)');
          }
          waiter.inbox.push(message);
          // An at-least-once channel: the same message arrives twice.
          if (fate > 0.85 && waiter.channel.kind === 'queue') waiter.inbox.push(message);
          if (fate < 0.24) {
            told.result = 'thrown';
            throw new Error('the message went out, then the notifier crashed (scheduled)');
          }
          told.result = 'delivered';
          return 'delivered';
        });
      },
    };
  }

  memory.onTicketLeft = (ticket, docId, granted) => {
    const waiter = outcome.waiters.find((candidate) => candidate.ticket === ticket);
    scheduler.note(`ticket ${waiter?.owner ?? ticket} leaves the queue of ${docId}${granted ? ', granted' : ''}`);
  };

  /**
   * A waiter woken by a channel: one call with `wake` (it must answer queued), then it waits for its
   * channel; on `ready` it claims (the same acquire without `wake`), once or, for a message it got
   * twice, twice at once; a granted claim is a hold like any other. Some waiters die.
   */
  async function channelWaiter(id: number): Promise<void> {
    await scheduler.sleep(scheduler.random() * 250);
    const singles = workload.filter((target) => target.granularity !== 'document' || target.ids.length === 1);
    const target = scheduler.pick(singles.length > 0 ? singles : [{ granularity: 'document', ids: ['a'] } as const]);
    const mode = scheduler.pick(['exclusive', 'shared'] as const);
    const ttlMs = 100 + Math.floor(scheduler.random() * 300);
    const dies = scheduler.chance(0.15);
    const queueTtlMs = dies || scheduler.chance(0.3) ? 20 + Math.floor(scheduler.random() * 150) : 300 + Math.floor(scheduler.random() * 700);
    const owner = `w${id}`;
    const requestId = `req-${owner}`;
    const channel: WakeChannel = scheduler.chance(0.5)
      ? { kind: 'task', taskToken: `task-${owner}` }
      : { kind: 'queue', queueUrl: `https://sqs.example/${owner}` };
    const goneAt = channel.kind === 'task' && scheduler.chance(0.2) ? scheduler.now + Math.floor(scheduler.random() * 400) : Number.POSITIVE_INFINITY;
    const call: Call = { owner, target, mode, ttlMs, waitMs: 0, deliveries: 1, requestId };
    outcome.calls.set(owner, call);
    const waiter: Waiter = { owner, channel, call, dies, goneAt, told: [], inbox: [], claimed: [] };
    waiters.set(channelKey(channel), waiter);
    outcome.waiters.push(waiter);
    try {
      const wake = channel.kind === 'task' ? { taskToken: channel.taskToken } : { queueUrl: channelKey(channel) };
      const answer = await engine.acquireOrQueue({ namespace: NAMESPACE, ...target, mode, owner, ttlMs, queueTtlMs, requestId, wake });
      if ('status' in answer) {
        waiter.answer = 'queued';
        waiter.ticket = answer.ticket;
      } else {
        waiter.answer = 'granted';
        outcome.queueProblems.push(`a call with wake answered a grant: ${owner} got lease ${answer.leaseId}, which its channel may never hear of`);
      }
    } catch (error) {
      waiter.answer = 'failed';
      const scheduled = error instanceof Error && error.message.endsWith('(scheduled)');
      if (!expectedTrouble(error) && !(error instanceof LockOutcomeUnknownError) && !(error instanceof LockHeldError) && !scheduled) {
        outcome.problems.push(`acquireOrQueue of ${owner} failed unexpectedly: ${String(error)}`);
      }
      // Told by the call that it failed, it stops waiting (a task that failed): its channel is gone.
      waiter.goneAt = Math.min(waiter.goneAt, scheduler.now);
      return;
    }
    if (dies) return;
    const until = scheduler.now + queueTtlMs + ttlMs + 1_000;
    for (let read = 0; scheduler.now <= until; ) {
      const fresh = waiter.inbox.slice(read);
      read = waiter.inbox.length;
      if (fresh.some((message) => message.outcome === 'failed')) return;
      const wakeUps = fresh.filter((message) => message.outcome === 'ready').length;
      if (wakeUps > 0) {
        // Every wake-up that arrived makes a claim; copies that arrived together claim at once.
        const claims = Array.from({ length: Math.min(wakeUps, 2) }, (_, index) =>
          actors.run(`${owner}#claim${waiter.claimed.length}-${index}`, () => acquireOnce(call)),
        );
        const holds = (await Promise.all(claims)).filter((hold): hold is Hold => hold !== undefined);
        waiter.claimed.push(...holds);
        if (holds.length > 0) {
          await useClaim(waiter, holds.at(-1)!);
          return;
        }
      }
      if (gone(waiter) && waiter.channel.kind === 'task') return;
      await scheduler.sleep(5 + scheduler.random() * 30);
    }
  }

  /** A claimed grant in use: renewed now and then, then released (or the waiter crashes and it runs out). */
  async function useClaim(waiter: Waiter, hold: Hold): Promise<void> {
    const cut = (at: number): void => {
      for (const segment of hold.segments) segment[1] = Math.min(segment[1], at);
    };
    let leaseToken = hold.token;
    for (let step = Math.floor(scheduler.random() * 3); step > 0; step--) {
      await scheduler.sleep(scheduler.random() * waiter.call.ttlMs * 0.6);
      if (scheduler.now >= hold.segments.at(-1)![1]) return;
      if (!scheduler.chance(0.6)) continue;
      try {
        const renewal = await engine.renew({ leaseToken, ttlMs: waiter.call.ttlMs });
        leaseToken = renewal.leaseToken;
        hold.segments.push([scheduler.now, realEnd(renewal.expiresAt)]);
        await checkBacked(hold, hold.grantedKeys, renewal.expiresAt, 'renewal');
      } catch (error) {
        if (error instanceof LeaseLostError) {
          cut(scheduler.now);
          return;
        }
        if (!expectedTrouble(error)) outcome.problems.push(`renew of ${waiter.owner} failed unexpectedly: ${String(error)}`);
      }
    }
    if (scheduler.chance(0.15)) return; // crashed: the lease runs out on its own
    cut(scheduler.now);
    await engine.release({ leaseToken }).catch((error: unknown) => {
      if (!expectedTrouble(error)) outcome.problems.push(`release of ${waiter.owner} failed unexpectedly: ${String(error)}`);
    });
  }

  async function busySweeper(): Promise<void> {
    for (let runs = 0; runs < 6; runs++) {
      await scheduler.sleep(scheduler.random() * 200);
      await engine.sweep({ batchSize: 3, maxBatches: 2 }).catch(() => undefined);
    }
  }

  /** The end: the clock past every ticket and lease, and the sweeper run a few times (each may meet a fault). */
  async function settleQueues(): Promise<void> {
    for (let round = 0; round < 4; round++) {
      scheduler.now += 3_000;
      await engine.sweep({ batchSize: 20, maxBatches: 5 }).catch(() => undefined);
    }
  }

  /**
   * The work workload's messages (drawn first), and the watch on their work documents: every outcome
   * the primary applies, with when it stops being everyone's answer (`keptUntil`); a completed one
   * that leaves the primary before then (replaced by a claim, or deleted by the sweeper), and a
   * second completed one applied before then, break it as they happen.
   */
  function watchWork(): WorkLog {
    const messages = [0, 1, 2].map((index): Message => {
      const name = `m${index}`;
      const target = scheduler.pick(WORK_TARGETS);
      const sameCaller = scheduler.chance(0.25);
      const byRequestId = sameCaller && scheduler.chance(0.5);
      const key = byRequestId ? `msg-${name}` : `key-${name}`;
      const deliveries = 1 + Math.floor(scheduler.random() * 3);
      const docId = workDocId(NAMESPACE, workKeyHash({ namespace: NAMESPACE, ...target } as LockTarget, key));
      return { name, target, key, byRequestId, sameCaller, deliveries, docId, otherPayloadLast: !sameCaller && deliveries > 1 };
    });
    const log: WorkLog = {
      messages,
      calls: [],
      records: [],
      applied: [],
      problems: [],
      payloads: new Map(),
      figures: { runs: 0, paused: 0, crashed: 0, renewed: 0 },
    };
    /** An instant by a lease's clock (its delivery's), on true time. */
    const trueTime = (at: number, lease: string): number => at - (offsets.get(leaseActors.get(lease) ?? '') ?? 0);
    type Recorded = NonNullable<StoredWork['outcome']>;
    const same = (a: Recorded | undefined, b: Recorded | undefined): boolean => a?.lease === b?.lease && a?.recordedAt === b?.recordedAt;
    memory.onWork = (docId, before, after) => {
      const message = messages.find((candidate) => candidate.docId === docId)?.name ?? docId;
      const [was, is] = [before?.outcome, after?.outcome];
      if (was && !same(was, is)) {
        const record = log.applied.find((applied) => applied.lease === was.lease);
        const how = !after ? 'deleted' : is ? `replaced by ${is.owner}'s ${is.status} record` : `replaced by ${after.claim?.owner}'s claim`;
        if (record) record.gone = { at: scheduler.now, how };
        if (was.status === 'completed' && record && scheduler.now < record.keptUntil) {
          log.problems.push(
            `recorded result lost: ${message}'s result recorded by ${was.owner} (kept until ${record.keptUntil}) was ${how} at ${scheduler.now}`,
          );
        }
      }
      if (!is || same(was, is)) return;
      if (is.result === 'forged') log.problems.push(`forged record: the thief's record for ${message} was applied`);
      if (is.status === 'completed') {
        for (const earlier of log.applied) {
          if (earlier.message !== message || earlier.status !== 'completed' || scheduler.now >= earlier.keptUntil) continue;
          log.problems.push(
            `completed twice: ${message} recorded completed by ${is.owner} at ${scheduler.now}, while ${earlier.owner}'s record was kept until ${earlier.keptUntil}`,
          );
        }
      }
      log.applied.push({
        message,
        lease: is.lease,
        owner: is.owner,
        status: is.status,
        result: is.result,
        fencingToken: is.fencingToken,
        at: scheduler.now,
        expiresAt: is.expiresAt,
        keptUntil: trueTime(is.expiresAt, is.lease) - SKEW,
      });
    };
    return log;
  }

  /** The store as the engine sees it in the work workload: a delivery's first read of its work's document is noted on its call, on true time. */
  function notingWorkReads(inner: LockStore): LockStore {
    return {
      ...inner,
      readPrimary: (ids) => {
        const [call, docId] = workCalls.get(actors.getStore() ?? '') ?? [];
        return inner.readPrimary(ids).then((found) => {
          if (call && docId && call.readAt === undefined && ids.includes(docId)) call.readAt = scheduler.now;
          return found;
        });
      },
    };
  }

  /** Whether the primary has `hold`'s lease on every key of its lock, unexpired by the holder's clock (a look at the store, not a step). */
  async function heldOnPrimary(hold: Hold): Promise<boolean> {
    const docIds = hold.grantedKeys.map((key) => lockDocId(NAMESPACE, hold.granularity, key.key));
    const primary = await memory.read(docIds);
    const now = scheduler.now + offset();
    return docIds.every((docId) => (expiryOf(primary.get(docId), hold.leaseId) ?? Number.NEGATIVE_INFINITY) > now);
  }

  /**
   * One acquireWork of a delivery (tried again with its requestId when its outcome is unknown): a
   * hold that has taken the work on, the recorded result, or `refused` (in progress, or held).
   */
  async function acquireWorkOnce(message: Message, call: Call, payloadHash: string): Promise<Hold | CompletedWork | 'refused' | undefined> {
    const { owner, target, ttlMs, waitMs, requestId } = call;
    const actor = actors.getStore() ?? '';
    const payloads = outcome.work!.payloads;
    payloads.set(owner, payloadHash);
    for (let attempt = 0; attempt < 2; attempt++) {
      const misled = watchStale();
      const log: WorkCall = { message: message.name, owner, startedAt: scheduler.now };
      outcome.work!.calls.push(log);
      workCalls.set(actor, [log, message.docId]);
      try {
        const answer = await engine.acquireWork({
          namespace: NAMESPACE,
          ...target,
          mode: 'exclusive',
          owner,
          ttlMs,
          waitMs,
          ...(requestId ? { requestId } : {}),
          idempotencyKey: message.byRequestId ? true : message.key,
          payloadHash,
        });
        log.answeredAt = scheduler.now;
        if ('leaseToken' in answer) {
          log.answer = { kind: 'grant', leaseId: answer.leaseId };
          leaseActors.set(answer.leaseId, actor);
          return await holdFor(call, answer, misled, message.name);
        }
        if (answer.status === 'completed') {
          log.answer = { kind: 'completed', answer };
          if (payloads.get(answer.owner) !== payloadHash)
            outcome.work!.problems.push(`another payload's result: ${owner} (${message.name}) was answered the record of ${answer.owner}, of another payload`);
          return answer;
        }
        outcome.problems.push(`acquireWork of ${owner} answered ${answer.status} without a wake channel`);
        return undefined;
      } catch (error) {
        log.answeredAt = scheduler.now;
        log.answer = { kind: 'error', error: (error as Error).name };
        if (error instanceof LockOutcomeUnknownError) outcome.unknown.add(owner);
        else outcome.failed.set(owner, (error as Error).message);
        if (error instanceof WorkInProgressError || error instanceof LockHeldError) return 'refused';
        if (error instanceof WorkPayloadMismatchError) {
          if (error.context.storedPayloadHash === payloadHash)
            outcome.work!.problems.push(`${owner} (${message.name}) was refused as another payload, of its own`);
          return 'refused';
        }
        if (!expectedTrouble(error) && !(error instanceof LockOutcomeUnknownError)) {
          outcome.problems.push(`acquireWork of ${owner} failed unexpectedly: ${String(error)}`);
          return undefined;
        }
        // Only a retry with the requestId can claim what an unknown outcome may hold.
        const retryable = error instanceof LockOutcomeUnknownError || error instanceof StoreUnavailableError;
        if (!(retryable && requestId)) return undefined;
      } finally {
        workCalls.delete(actor);
      }
    }
    return undefined;
  }

  /**
   * The work under a grant: it runs a while (renewed now and then), some deliveries stop past their
   * lease (a pause), some crash, then it records its outcome as it releases (`completed` with a result
   * of its own, or `failed`), trying again after trouble. `done`: this delivery is done with the
   * message (completed, or it crashed); `again`: its queue brings the message back to it.
   */
  async function runWork(message: Message, hold: Hold): Promise<'done' | 'again'> {
    const figures = outcome.work!.figures;
    figures.runs++;
    let leaseToken = hold.token;
    const cut = (at: number): void => {
      for (const segment of hold.segments) segment[1] = Math.min(segment[1], at);
    };
    await scheduler.sleep(scheduler.random() * 80);
    if (scheduler.chance(0.3)) {
      try {
        const renewal = await engine.renew({ leaseToken, ttlMs: hold.call.ttlMs });
        leaseToken = renewal.leaseToken;
        figures.renewed++;
        hold.segments.push([scheduler.now, realEnd(renewal.expiresAt)]);
        await checkBacked(hold, hold.grantedKeys, renewal.expiresAt, 'renewal');
      } catch (error) {
        // Told that it lost the lease, a holder stops at once (and records nothing).
        if (error instanceof LeaseLostError) {
          cut(scheduler.now);
          return 'again';
        }
        if (!expectedTrouble(error)) outcome.problems.push(`renew of ${hold.owner} failed unexpectedly: ${String(error)}`);
      }
      await scheduler.sleep(scheduler.random() * 60);
    }
    // A process stopped past its lease (garbage collection, a slow disk) records late: it must be refused.
    if (scheduler.chance(0.2)) {
      figures.paused++;
      await scheduler.sleep(Math.max(0, hold.segments.at(-1)![1] - scheduler.now) + scheduler.random() * 100);
    }
    if (scheduler.chance(0.1)) {
      figures.crashed++;
      return 'done';
    }
    const status: WorkStatus = scheduler.chance(0.15) ? 'failed' : 'completed';
    const result = status === 'completed' ? { by: hold.owner, lease: hold.leaseId } : { error: `${hold.owner} gave up` };
    // Short enough to expire inside the schedule, so that later deliveries run the work again.
    const ttlMs = 50 + Math.floor(scheduler.random() * 1_150);
    cut(scheduler.now);
    for (let tries = 0; tries < 3; tries++) {
      const sent: RecordTry = {
        message: message.name,
        owner: hold.owner,
        leaseId: hold.leaseId,
        status,
        result,
        sentAt: scheduler.now,
        heldAtSend: await heldOnPrimary(hold),
        recordedBefore: outcome.work!.applied.some((record) => record.lease === hold.leaseId),
      };
      outcome.work!.records.push(sent);
      try {
        const answer = await engine.release({ leaseToken, record: { status, result, ttlMs } });
        sent.answeredAt = scheduler.now;
        sent.answer = answer.recorded ?? 'trouble';
        if (answer.recorded !== status) outcome.problems.push(`release of ${hold.owner} recording ${status} answered recorded ${answer.recorded}`);
        return status === 'completed' ? 'done' : 'again';
      } catch (error) {
        sent.answeredAt = scheduler.now;
        if (error instanceof LeaseLostError) {
          sent.answer = 'not recorded';
          return 'again';
        }
        sent.answer = 'trouble';
        if (!expectedTrouble(error)) {
          outcome.problems.push(`release of ${hold.owner} recording ${status} failed unexpectedly: ${String(error)}`);
          return 'again';
        }
        await scheduler.sleep(5 + scheduler.random() * 30);
      }
    }
    return 'again';
  }

  /**
   * One delivery of a message: acquireWork until this delivery is done with it (answered the recorded
   * result, ran it and recorded `completed`, or crashed). After a refusal (in progress, held), trouble,
   * a `failed` record or a record refused, the message comes back to it a while later (up to three tries).
   */
  async function deliverWork(message: Message, delivery: number): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const owner = message.sameCaller ? message.name : `${message.name}.${delivery}${attempt > 0 ? `-${attempt}` : ''}`;
      const requestId = message.sameCaller ? `msg-${message.name}` : scheduler.chance(0.5) ? `req-${owner}` : undefined;
      const call: Call = {
        owner,
        target: message.target,
        mode: 'exclusive',
        ttlMs: 100 + Math.floor(scheduler.random() * 300),
        waitMs: scheduler.chance(0.5) ? 100 + Math.floor(scheduler.random() * 300) : 0,
        deliveries: message.sameCaller ? message.deliveries : 1,
        ...(requestId ? { requestId } : {}),
      };
      outcome.calls.set(owner, call);
      const variant = message.otherPayloadLast && delivery === message.deliveries ? 'other' : 'first';
      const answer = await acquireWorkOnce(message, call, payloadHashOf(`${message.name}:${variant}`)!);
      if (answer !== undefined && answer !== 'refused') {
        if ('status' in answer) return;
        if ((await runWork(message, answer)) === 'done') return;
      }
      await scheduler.sleep(20 + scheduler.random() * 200);
    }
  }

  /** Every delivery of a message: the first soon, the others at once (duplicates racing) or much later (after the record may have expired). */
  const deliveriesOf = (message: Message): Array<Promise<void>> =>
    Array.from({ length: message.deliveries }, (_, index) =>
      actors.run(`${message.name}#${index + 1}`, async () => {
        await scheduler.sleep(index === 0 ? scheduler.random() * 100 : scheduler.chance(0.4) ? scheduler.random() * 40 : 100 + scheduler.random() * 900);
        await deliverWork(message, index + 1);
      }),
    );

  async function workSweeper(): Promise<void> {
    for (let runs = 0; runs < 6; runs++) {
      await scheduler.sleep(scheduler.random() * 300);
      await engine.sweep({ batchSize: 3, maxBatches: 2 }).catch(() => undefined);
    }
  }

  const everyone = queue
    ? [
        ...[0, 1, 2].map((id) => client(id)),
        ...[0, 1, 2, 3].map((id) => actors.run(`w${id}`, () => channelWaiter(id))),
        actors.run('thief', thief),
        actors.run('sweeper', busySweeper),
        actors.run('failover', failover),
        actors.run('operator', operator),
      ]
    : withWork
      ? [
          ...outcome.work!.messages.flatMap(deliveriesOf),
          client(0),
          actors.run('thief', thief),
          actors.run('sweeper', workSweeper),
          actors.run('failover', failover),
          ...(adversary ? [actors.run('forger', forger)] : []),
        ]
      : [
          ...[0, 1, 2, 3].map((id) => client(id)),
          actors.run('thief', thief),
          actors.run('sweeper', sweeper),
          actors.run('failover', failover),
          ...(revoking ? [actors.run('revoker', revoker)] : []),
          ...(adversary ? [actors.run('forger', forger)] : []),
        ];
  // The engine's jitter (backoff, contention pauses) comes from the seed too, so that a seed replays its schedule.
  const jitter = vi.spyOn(Math, 'random').mockImplementation(seededRandom(seed ^ 0x5bd1e995));
  try {
    await scheduler.run(Promise.all(everyone).then(() => (queue ? actors.run('end', settleQueues) : undefined)));
  } finally {
    jitter.mockRestore();
  }
  return { outcome, store: memory, scheduler };
}

interface Violation {
  text: string;
  /** The circumstances of the holds involved, for the survey: nesting, stale read, late renewal, duplicate delivery, waited. */
  shape: string;
}

/**
 * What the holds of a violation had been through, for the survey: `nesting` when a global hold
 * meets a document or tree hold on the root (an engine that does not nest them),
 * else the circumstances that can explain it: a lagging copy showed a hold's acquire (or renewal)
 * its own lease otherwise than the primary had it, a renewal sent after the lease ran out, two
 * deliveries of one call, a caller that waited (waitMs > 0: attempts rolled back and tried again).
 */
function shapeOf(holds: Hold[], calls: readonly Call[], docId?: string, overlapping?: Array<[Hold, number]>): string {
  if (docId === ROOT && new Set(holds.map((hold) => hold.granularity === 'global')).size > 1) return 'nesting';
  const tags: string[] = [];
  for (const hold of holds) {
    if (hold.staleAcquire.has('read')) tags.push(`stale read in a ${hold.granularity} acquire`);
    if (hold.staleAcquire.has('search')) tags.push(`stale search below in a ${hold.granularity} acquire`);
  }
  if (overlapping?.some(([hold, segment]) => hold.staleRenewals.has(segment)) || holds.some((hold) => hold.staleLoss)) tags.push('stale read in a renewal');
  if (overlapping?.some(([hold, segment]) => hold.lateRenewals.has(segment))) tags.push('late renewal');
  if (calls.some((call) => call.deliveries > 1)) tags.push('delivered twice');
  if (calls.some((call) => call.waitMs > 0)) tags.push('waited');
  return tags.length > 0 ? [...new Set(tags)].join(' + ') : 'other';
}

/**
 * The waiters the call left queued whom nothing was ever told (neither woken nor failed), but for
 * those whose ticket a write with a lost answer dropped, or a forced re-creation of the lock index.
 */
function untold(outcome: Outcome, lostDrops = false): Waiter[] {
  return outcome.waiters.filter(
    (waiter) =>
      waiter.answer === 'queued' &&
      waiter.told.length === 0 &&
      !(waiter.ticket !== undefined && outcome.droppedByRecreation.has(waiter.ticket)) &&
      (waiter.ticket !== undefined && outcome.lostDrops.has(waiter.ticket)) === lostDrops,
  );
}

/**
 * The work workload's checks, on true time; a record is everyone's answer until `keptUntil` (its
 * expiry by its recorder's clock, less the skew bound). (1) Every release answered `completed` had
 * its record applied, and a key's completed records follow one another only once the one before is
 * no longer kept: two runs never both complete. (2) A call that read the work's document after a
 * completed record was answered, and before it stopped being kept, was answered that record, never a
 * grant (the work would run again) nor anything else. (3) A release records only if its lease held
 * every key of its lock on the primary, unexpired, when it was sent (or had recorded already: a retry
 * whose first answer was lost). And every completed answer is a record some lease of that work made.
 * What broke as it happened on the primary (`problems`) comes first.
 */
function workViolations(work: WorkLog): Violation[] {
  const found: Violation[] = work.problems.map((text) => ({ text, shape: `work: ${text.split(':')[0]} (on the primary)` }));
  const appliedOf = (lease: string): AppliedRecord | undefined => work.applied.find((record) => record.lease === lease);
  const sameResult = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
  for (const message of work.messages) {
    const completions = work.records.filter((sent) => sent.message === message.name && sent.status === 'completed' && sent.answer === 'completed');
    const records: AppliedRecord[] = [];
    for (const sent of completions) {
      const record = appliedOf(sent.leaseId);
      if (record?.status !== 'completed') {
        found.push({
          text: `recorded nothing: ${sent.owner}'s release was answered completed for ${message.name}, but the primary never had its record`,
          shape: 'work: recorded nothing',
        });
      } else if (!records.includes(record)) records.push(record);
      if (!sent.recordedBefore && !sent.heldAtSend) {
        found.push({
          text: `recorded without the lock: ${sent.owner}'s release, sent at ${sent.sentAt}, recorded ${message.name}'s result though its lease no longer held the lock on the primary`,
          shape: 'work: recorded without the lock',
        });
      }
    }
    records.sort((a, b) => a.at - b.at);
    for (const [index, later] of records.entries()) {
      const earlier = records[index - 1];
      if (!earlier || later.at >= earlier.keptUntil) continue;
      found.push({
        text: `completed twice: ${message.name} was recorded completed by ${earlier.owner} at ${earlier.at} (kept until ${earlier.keptUntil}), and again by ${later.owner} at ${later.at}`,
        shape: 'work: completed twice',
      });
    }
    for (const sent of completions) {
      const record = appliedOf(sent.leaseId);
      if (!record || sent.answeredAt === undefined) continue;
      for (const call of work.calls) {
        if (call.message !== message.name || call.readAt === undefined || call.readAt < sent.answeredAt || call.readAt >= record.keptUntil) continue;
        const answer = call.answer;
        if (answer?.kind === 'completed' && sameResult(answer.answer.result, record.result) && answer.answer.fencingToken === record.fencingToken) continue;
        // A call of another payload is refused that record, by name (and only such a call: acquireWorkOnce checks).
        const otherPayload = work.payloads.get(call.owner) !== work.payloads.get(record.owner);
        if (otherPayload && answer?.kind === 'error' && answer.error === 'WorkPayloadMismatchError') continue;
        const told =
          answer?.kind === 'completed'
            ? `completed with ${JSON.stringify(answer.answer.result)}`
            : answer?.kind === 'grant'
              ? 'a grant: the work ran again'
              : (answer?.error ?? 'nothing');
        found.push({
          text: `recorded result lost: ${call.owner} read ${message.name}'s work at ${call.readAt}, after ${sent.owner}'s record was answered (at ${sent.answeredAt}; kept until ${record.keptUntil}), and was answered ${told}`,
          shape: `work: recorded result lost (answered ${answer?.kind ?? 'nothing'})`,
        });
      }
    }
  }
  for (const call of work.calls) {
    if (call.answer?.kind !== 'completed') continue;
    const { answer } = call.answer;
    const recorded = work.applied.some(
      (record) =>
        record.message === call.message &&
        record.status === 'completed' &&
        record.owner === answer.owner &&
        record.fencingToken === answer.fencingToken &&
        sameResult(record.result, answer.result),
    );
    if (!recorded) {
      found.push({
        text: `a result nobody recorded: ${call.owner} was answered ${JSON.stringify(answer)} for ${call.message}`,
        shape: 'work: a result nobody recorded',
      });
    }
  }
  return found;
}

/** What a work schedule exercised. */
function workFigures(work: WorkLog): Record<string, number> {
  const kept = (call: WorkCall): boolean =>
    call.readAt !== undefined &&
    work.records.some((sent) => {
      const record = sent.answer === 'completed' && sent.answeredAt !== undefined ? work.applied.find((applied) => applied.lease === sent.leaseId) : undefined;
      return sent.message === call.message && record !== undefined && call.readAt! >= sent.answeredAt! && call.readAt! < record.keptUntil;
    });
  return {
    ...work.figures,
    calls: work.calls.length,
    answeredCompleted: work.calls.filter((call) => call.answer?.kind === 'completed').length,
    checkedAgainstARecord: work.calls.filter(kept).length,
    inProgress: work.calls.filter((call) => call.answer?.kind === 'error' && call.answer.error === 'WorkInProgressError').length,
    payloadMismatches: work.calls.filter((call) => call.answer?.kind === 'error' && call.answer.error === 'WorkPayloadMismatchError').length,
    recordedCompleted: work.records.filter((sent) => sent.answer === 'completed').length,
    recordedFailed: work.records.filter((sent) => sent.answer === 'failed').length,
    notRecorded: work.records.filter((sent) => sent.answer === 'not recorded').length,
    retriedRecords: work.records.filter((sent) => sent.recordedBefore).length,
    // A completed record that ended and was followed by another run of the same work, in the schedule.
    ranAgainAfterExpiry: work.calls.filter(
      (call) =>
        call.answer?.kind === 'grant' &&
        work.applied.some((record) => record.message === call.message && record.status === 'completed' && record.at < call.answeredAt!),
    ).length,
    recordsSwept: work.applied.filter((record) => record.status === 'completed' && record.gone?.how === 'deleted').length,
    recordsReplacedByClaims: work.applied.filter((record) => record.status === 'completed' && record.gone?.how.endsWith('claim')).length,
  };
}

/** A fencing token's epoch: its lock index incarnation (packages/engine/src/fencing.ts). */
const epochOf = (token: string): bigint => BigInt(token) / 10n ** 16n;

/** Everything that must hold after a schedule; an empty list when it did. */
function violations(outcome: Outcome, store: MemoryLockStore): Violation[] {
  const found: Violation[] = outcome.problems.map((text) => ({ text, shape: 'problem' }));
  for (const text of outcome.queueProblems) found.push({ text, shape: 'queue' });
  // (c) Never left waiting forever: once every ticket and lease has run out and the sweeper has run,
  // every waiter the call left queued has been woken or told failed at least once.
  // Bounded exception: a ticket dropped by a write whose answer was lost
  // (nobody learns what that write did, and the document no longer shows it): the channel's own
  // timeout tells it (a Step Functions task's TimeoutSeconds; a queue consumer's own deadline).
  for (const waiter of untold(outcome)) {
    found.push({
      text: `never told: ${waiter.owner} (${waiter.answer}, ticket ${waiter.ticket}) was neither woken nor told it failed`,
      shape: 'queue: untold',
    });
  }
  for (const { hold, text } of outcome.unbacked) found.push({ text, shape: `unbacked: ${shapeOf([hold], [hold.call])}` });
  if (outcome.work) found.push(...workViolations(outcome.work));
  // Two deliveries of one call (same owner, same requestId): the later insertion takes the earlier
  // grant over (its fencing token is larger; judged on each grant's largest), so the earlier one
  // holds only until the later is granted.
  for (const a of outcome.holds) {
    for (const b of outcome.holds) {
      if (a === b || a.owner !== b.owner || compareFencingTokens(a.fencingToken, b.fencingToken) >= 0) continue;
      for (const segment of a.segments) segment[1] = Math.min(segment[1], b.segments[0]![0]);
    }
  }
  // A revoked hold ends at the operator's write (the documented exception: its fencing token fences it off from there).
  for (const hold of outcome.holds) {
    const revokedAt = outcome.revokedAt.get(hold.leaseId);
    if (revokedAt !== undefined) for (const segment of hold.segments) segment[1] = Math.min(segment[1], revokedAt);
  }
  found.push(...revocationViolations(outcome));
  // A delivery taken over before it heard of its grant never held anything.
  const holds = outcome.holds.filter((hold) => hold.segments.some(([start, end]) => start < end));
  const overlapping = (a: Hold, b: Hold): Array<[Hold, number]> =>
    a.segments.flatMap(([aStart, aEnd], aIndex) =>
      b.segments.flatMap(
        ([bStart, bEnd], bIndex): Array<[Hold, number]> =>
          Math.max(aStart, bStart) < Math.min(aEnd, bEnd)
            ? [
                [a, aIndex],
                [b, bIndex],
              ]
            : [],
      ),
    );
  for (const [index, a] of holds.entries()) {
    for (const b of holds.slice(index + 1)) {
      if (a.owner === b.owner) continue;
      for (const keyA of a.keys) {
        const keyB = b.keys.find((key) => key.docId === keyA.docId);
        if (!keyB || (compatible(keyA.mode, keyB.mode) && compatible(keyB.mode, keyA.mode))) continue;
        const overlap = overlapping(a, b);
        // Re-creating the lock index drops every holder of the old incarnation (the operator's forced
        // step): an old hold is then fenced off by the larger tokens of the new one, as checked below.
        const droppedBetween = outcome.recreations > 0 && epochOf(keyA.fencingToken) !== epochOf(keyB.fencingToken);
        if (overlap.length > 0 && !droppedBetween)
          found.push({
            text: `mutual exclusion: ${a.owner} (${keyA.mode}) and ${b.owner} (${keyB.mode}) both held ${keyA.docId}: ${JSON.stringify(a.segments)} / ${JSON.stringify(b.segments)}`,
            shape: shapeOf([a, b], [a.call, b.call], keyA.docId, overlap),
          });
        const [first, second, firstKey, secondKey] = a.segments[0]![0] <= b.segments[0]![0] ? [a, b, keyA, keyB] : [b, a, keyB, keyA];
        if (compareFencingTokens(secondKey.fencingToken, firstKey.fencingToken) <= 0) {
          found.push({
            text: `fencing order: ${second.owner} got ${secondKey.fencingToken} on ${keyA.docId} after ${first.owner} had ${firstKey.fencingToken}`,
            shape: shapeOf([a, b], [a.call, b.call], keyA.docId),
          });
        }
      }
    }
  }
  for (const lock of store.snapshot()) {
    for (const holder of lock.body.holders) {
      if (outcome.failed.has(holder.owner) && !outcome.unknown.has(holder.owner) && !outcome.granted.has(holder.owner)) {
        found.push({
          text: `all or nothing: ${holder.owner} failed (${outcome.failed.get(holder.owner)}) but still holds ${lock.docId}`,
          shape: shapeOf(
            outcome.holds.filter((hold) => hold.owner === holder.owner),
            [outcome.calls.get(holder.owner)!],
          ),
        });
      }
    }
  }
  return found;
}

/** Every S or X grant on a key the revoke wrote, handed out after the revoke answered, carries a larger token than the revoke's write there. */
function revocationViolations(outcome: Outcome): Violation[] {
  const found: Violation[] = [];
  for (const { revocation, answeredAt } of outcome.revocations) {
    const written = new Map(revocation.keys.map((key) => [lockDocId(NAMESPACE, revocation.target.granularity, key.key), key.fencingToken]));
    for (const hold of outcome.holds) {
      // Revoked itself, or granted before the revoke answered (its write may have come first: an intention below, revoked or not).
      if (hold.segments[0]![0] <= answeredAt || outcome.revokedAt.has(hold.leaseId)) continue;
      for (const key of hold.keys) {
        const revokedWith = written.get(key.docId);
        if (revokedWith !== undefined && (key.mode === 'S' || key.mode === 'X') && compareFencingTokens(key.fencingToken, revokedWith) <= 0)
          found.push({
            text: `fencing after revoke: ${hold.owner} got ${key.fencingToken} on ${key.docId} after the revoke's ${revokedWith}`,
            shape: `revoke: ${shapeOf([hold], [hold.call], key.docId)}`,
          });
      }
    }
  }
  return found;
}

/**
 * Schedules that once broke the lock (found by a random first seed in CI or a survey), replayed every
 * run. 31007078: a release clearing a directory's mark while a file lock that had passed the run-out
 * holder lived below (found with the rule that such a file lock writes the directory switched off).
 */
// 442215 (a 20,000-schedule survey from seed 424242): a waiter in the call whose ticket was handed the
// lock after its attempt had taken (then lost) the key by a write of its own left without leaving the
// queue, so its ticket became a holder nobody would release.
// 779683 (a 10,000-schedule survey from seed 777000): a delivery whose takeover's answer was lost found
// its lease only in the other delivery's note and failed without clearing it; that one's rollback gave `a` back to it.
// 910443734 (a random first seed): the same, for a waiter in the queue: its ticket was handed the lock,
// the other delivery took that over, and the waiter left the queue without clearing the note.
const SEEDS_THAT_BROKE_IT = [500515, 871242137, 862121079, 31007078, 442215, 779683, 910443734];
/** The same for the queue workload (runSchedule's `queue`). */
const SEEDS_THAT_BROKE_THE_QUEUE: number[] = [
  // 1049: a grant at once whose notification went out and then threw was rolled back under the waiter that had it.
  1049,
  // 1029: a grant handed over but never told (it had too little of its lease left to send) ran out, and
  // an acquire's write pruned it: only the sweeper told such waiters they had lost it, so nobody did.
  1029,
  // 1280: the sweeper's second delivery of a grant whose first had gone out (then thrown) found it
  // blocked around the target and put it back in the queue: granted again later under the same lease, taken from its waiter.
  1280,
  // 1402: a channel waiter's own call found its ticket handed the lock (on a re-read) and told it granted,
  // while the hand-over's delivery found the target blocked below and put it back in the queue: two holders.
  1402,
  // Issue 30 (surveys of about 25,000 queue schedules, when a hand-over granted on the waiter's behalf):
  // 900007467 a told grant taken away by its waiter's failing call; 123455182 a grant told after its
  // holder was removed; 123450257 a lease told twice with its fencing token going down. The
  // reservation and claim make each impossible by construction; they stay replayed.
  900007467, 123455182, 123450257,
  // 29157191: a directory lock's search below, from a copy showing its own write but not a later extension of a lock below, took that lock for run out.
  // (Found before the operator joined the schedules, which changed its draws: the schedule itself is kept in search-below-renewed.test.ts.)
  29157191,
  // 911417750: a grant answered just after a forced re-creation of the lock index (its holder went with the old incarnation): the checker's rule.
  911417750,
];

/**
 * The same for the work workload (runSchedule's `work`): schedules that once ran a key's work twice
 * to completion, lost a recorded result before its expiry, or recorded without the lock.
 */
const SEEDS_THAT_BROKE_THE_WORK: number[] = [1004, 5551768, 5550104, 5550014, 5550202, 5551593];
/**
 * Revoke schedules that once failed a check of the revoke workload: 768134631, a revoke landing
 * between an acquire's write of a key and its answer (the grant names a key already revoked: the
 * documented exception); 517689676, the acquire taking the revoked key again with the same lease (its
 * grant stands on that later write); 820784618, a multi-key revoke whose writes straddle another
 * caller's grant (tokens compare per key); 767393504 and 767394759 (a 20,000-schedule survey), a
 * revoked holder that had taken over an earlier delivery of its call: that delivery's grant goes with
 * it (the note that would give the key back to it is removed too).
 */
const SEEDS_THAT_BROKE_THE_REVOKES: number[] = [768134631, 517689676, 820784618, 767393504, 767394759];

describe('interleavings of concurrent calls', () => {
  it('keep the lock in every schedule that once broke it', async () => {
    for (const seed of SEEDS_THAT_BROKE_IT) {
      const { outcome, store } = await runSchedule(seed);
      expect(violations(outcome, store).map((problem) => `seed ${seed}: ${problem.text}`)).toEqual([]);
    }
  });

  it(
    `keep mutual exclusion, fencing order, all-or-nothing, backed grants and holder-only renew/release over ${RUNS} schedules`,
    async () => {
      let grants = 0;
      let unknown = 0;
      let lateRenewals = 0;
      let staleAcquires = 0;
      let staleAnswers = 0;
      // Survey: per shape, the schedules that showed it and the first of them.
      const shapes = new Map<string, { schedules: number; firstSeed: number; example: string }>();
      let failing = 0;
      for (let run = 0; run < RUNS; run++) {
        const seed = FIRST_SEED + run;
        if (SURVEY && run > 0 && run % SURVEY_PROGRESS_EVERY === 0) console.log(`[survey] ${run}/${RUNS} schedules, ${failing} broke so far`);
        const { outcome, store, scheduler } = await runSchedule(seed);
        grants += outcome.holds.length;
        unknown += outcome.unknown.size;
        lateRenewals += outcome.holds.reduce((sum, hold) => sum + hold.lateRenewals.size, 0);
        staleAcquires += outcome.holds.filter((hold) => hold.staleAcquire.size > 0).length;
        staleAnswers += outcome.staleAnswers;
        const problems = violations(outcome, store);
        if (problems.length === 0) continue;
        if (!SURVEY) {
          const holds = outcome.holds.map(
            (hold) => `${hold.owner} ${hold.granularity} ${hold.call.mode} lease ${hold.leaseId} token ${hold.fencingToken} ${JSON.stringify(hold.segments)}`,
          );
          throw new Error(
            `seed ${seed} (replay: INTERLEAVING_SEED=${seed} INTERLEAVING_RUNS=1):\n${problems.map((problem) => `${problem.text} [${problem.shape}]`).join('\n')}\nholds:\n${holds.join('\n')}\nlast steps:\n${scheduler.trace.join('\n')}`,
          );
        }
        failing++;
        for (const shape of new Set(problems.map((problem) => problem.shape))) {
          const entry = shapes.get(shape) ?? { schedules: 0, firstSeed: seed, example: problems.find((problem) => problem.shape === shape)!.text };
          entry.schedules++;
          shapes.set(shape, entry);
        }
      }
      if (process.env.INTERLEAVING_STATS || SURVEY) console.log({ runs: RUNS, grants, unknown, lateRenewals, staleAnswers, staleAcquires });
      if (SURVEY && failing > 0) {
        const lines = [...shapes.entries()]
          .sort((a, b) => b[1].schedules - a[1].schedules)
          .map(
            ([shape, entry]) =>
              `${((entry.schedules * 1000) / RUNS).toFixed(1)} per 1000 schedules: ${shape} (first: seed ${entry.firstSeed}: ${entry.example})`,
          );
        throw new Error(`${failing} of ${RUNS} schedules broke the lock:\n${lines.join('\n')}`);
      }
      // The schedules did exercise the lock: many grants, and some outcomes only a requestId could recover.
      if (RUNS >= 50) expect(grants).toBeGreaterThan(RUNS * 3);
      if (RUNS >= 500) expect(unknown).toBeGreaterThan(0);
    },
    SURVEY_TIMEOUT_MS,
  );

  it('keep the lock under revokes in every schedule that once failed', async () => {
    for (const seed of SEEDS_THAT_BROKE_THE_REVOKES) {
      const { outcome, store } = await runSchedule(seed, 'revoke');
      expect(violations(outcome, store).map((problem) => `seed ${seed}: ${problem.text}`)).toEqual([]);
    }
  });

  it(
    `keep mutual exclusion and fencing order while an operator revokes locks, over ${REVOKE_RUNS} schedules`,
    async () => {
      let revoked = 0;
      let failing = 0;
      const examples: string[] = [];
      for (let run = 0; run < REVOKE_RUNS; run++) {
        const seed = FIRST_SEED + run;
        if (SURVEY && run > 0 && run % SURVEY_PROGRESS_EVERY === 0) console.log(`[survey] revoke ${run}/${REVOKE_RUNS} schedules, ${failing} broke so far`);
        const { outcome, store, scheduler } = await runSchedule(seed, 'revoke');
        revoked += outcome.revokedAt.size;
        const problems = violations(outcome, store);
        if (problems.length === 0) continue;
        if (!SURVEY) {
          throw new Error(
            `seed ${seed} (replay: INTERLEAVING_SEED=${seed} INTERLEAVING_REVOKE_RUNS=1):\n${problems.map((problem) => problem.text).join('\n')}\nlast steps:\n${scheduler.trace.join('\n')}`,
          );
        }
        failing++;
        if (examples.length < 5) examples.push(`seed ${seed}: ${problems[0]!.text}`);
      }
      if (process.env.INTERLEAVING_STATS || SURVEY) console.log({ revokeRuns: REVOKE_RUNS, revoked });
      if (failing > 0) throw new Error(`${failing} of ${REVOKE_RUNS} schedules broke the lock under revokes:\n${examples.join('\n')}`);
      // The operator did take leases from their holders.
      if (REVOKE_RUNS >= 100) expect(revoked).toBeGreaterThan(REVOKE_RUNS / 10);
    },
    SURVEY_TIMEOUT_MS,
  );

  it('keep the queue in every schedule that once broke it', async () => {
    for (const seed of SEEDS_THAT_BROKE_THE_QUEUE) {
      const { outcome, store } = await runSchedule(seed, 'queue');
      expect(violations(outcome, store).map((problem) => `seed ${seed}: ${problem.text}`)).toEqual([]);
    }
  });

  it(
    `with channel waiters, in-call waiters and a busy sweeper: no incompatible holders (claims count), fencing in grant order, every waiter told, over ${QUEUE_RUNS} schedules`,
    async () => {
      // Survey: per kind of violation, the schedules that showed it and the first of them.
      const kinds = new Map<string, { schedules: number; firstSeed: number; example: string }>();
      let failing = 0;
      const figures = {
        grants: 0,
        waiters: 0,
        queued: 0,
        woken: 0,
        receivedTwice: 0,
        rewoken: 0,
        claims: 0,
        thrown: 0,
        gone: 0,
        failedTold: 0,
        died: 0,
        untoldLostDrop: 0,
        recreations: 0,
        adoptions: 0,
      };
      for (let run = 0; run < QUEUE_RUNS; run++) {
        const seed = FIRST_SEED + run;
        if (SURVEY && run > 0 && run % SURVEY_PROGRESS_EVERY === 0) console.log(`[survey] ${run}/${QUEUE_RUNS} queue schedules, ${failing} broke so far`);
        const { outcome, store, scheduler } = await runSchedule(seed, 'queue');
        figures.grants += outcome.holds.length;
        for (const waiter of outcome.waiters) {
          figures.waiters++;
          if (waiter.answer === 'queued') figures.queued++;
          if (waiter.dies) figures.died++;
          const wakeUps = waiter.told.filter((told) => told.outcome === 'ready');
          if (wakeUps.length > 0) figures.woken++;
          if (wakeUps.length > 1) figures.rewoken++;
          if (waiter.inbox.filter((message) => message.outcome === 'ready').length > 1) figures.receivedTwice++;
          figures.claims += waiter.claimed.length;
          figures.thrown += waiter.told.filter((told) => told.result === 'thrown').length;
          figures.gone += waiter.told.filter((told) => told.result === 'gone').length;
          if (waiter.told.some((told) => told.outcome === 'failed')) figures.failedTold++;
        }
        figures.untoldLostDrop += untold(outcome, true).length;
        figures.recreations += outcome.recreations;
        figures.adoptions += outcome.adoptions;
        const problems = violations(outcome, store);
        if (problems.length === 0) continue;
        if (SURVEY) {
          failing++;
          for (const problem of problems) {
            const kind = problem.text.split(':')[0]!;
            const entry = kinds.get(kind) ?? { schedules: 0, firstSeed: seed, example: problem.text };
            entry.schedules++;
            kinds.set(kind, entry);
          }
          continue;
        }
        const holds = outcome.holds.map(
          (hold) => `${hold.owner} ${hold.granularity} ${hold.call.mode} lease ${hold.leaseId} token ${hold.fencingToken} ${JSON.stringify(hold.segments)}`,
        );
        const told = outcome.waiters.map(
          (waiter) =>
            `${waiter.owner} ${waiter.channel.kind} ${waiter.answer} ticket ${waiter.ticket}${waiter.dies ? ' dies' : ''}: told ${JSON.stringify(waiter.told)}, claimed ${waiter.claimed.length}`,
        );
        throw new Error(
          `seed ${seed} (replay: INTERLEAVING_SEED=${seed} INTERLEAVING_RUNS=1):\n${problems.map((problem) => `${problem.text} [${problem.shape}]`).join('\n')}\nholds:\n${holds.join('\n')}\nwaiters:\n${told.join('\n')}\nlast steps:\n${scheduler.trace.join('\n')}`,
        );
      }
      if (process.env.INTERLEAVING_STATS || SURVEY) console.log({ runs: QUEUE_RUNS, ...figures });
      if (SURVEY && failing > 0) {
        const lines = [...kinds.entries()].map(([kind, entry]) => `${entry.schedules} schedules: ${kind} (first: seed ${entry.firstSeed}: ${entry.example})`);
        throw new Error(`${failing} of ${QUEUE_RUNS} schedules broke the queue:\n${lines.join('\n')}`);
      }
      // The schedules did exercise the queue: waiters queued, woken, woken again, woken twice, claimed, told gone.
      if (QUEUE_RUNS >= 200) {
        expect(figures.queued).toBeGreaterThan(QUEUE_RUNS / 5);
        expect(figures.claims).toBeGreaterThan(QUEUE_RUNS / 5);
        expect(figures.rewoken).toBeGreaterThan(0);
        expect(figures.receivedTwice).toBeGreaterThan(0);
        expect(figures.gone).toBeGreaterThan(0);
        expect(figures.failedTold).toBeGreaterThan(0);
      }
    },
    SURVEY_TIMEOUT_MS,
  );

  it('run work once in every schedule that once broke it', async () => {
    for (const seed of SEEDS_THAT_BROKE_THE_WORK) {
      const { outcome, store } = await runSchedule(seed, 'work');
      expect(violations(outcome, store).map((problem) => `seed ${seed}: ${problem.text}`)).toEqual([]);
    }
  });

  it(
    `with deliveries of work that runs once: never two completed runs of a key while its record is kept, no recorded result lost before its expiry, records only under the lock, over ${WORK_RUNS} schedules`,
    async () => {
      // Survey: per shape of violation, the schedules that showed it and the first of them.
      const shapes = new Map<string, { schedules: number; firstSeed: number; example: string }>();
      let failing = 0;
      const figures: Record<string, number> = {};
      for (let run = 0; run < WORK_RUNS; run++) {
        const seed = FIRST_SEED + run;
        if (SURVEY && run > 0 && run % SURVEY_PROGRESS_EVERY === 0) console.log(`[survey] ${run}/${WORK_RUNS} work schedules, ${failing} broke so far`);
        const { outcome, store, scheduler } = await runSchedule(seed, 'work');
        const work = outcome.work!;
        for (const [name, count] of Object.entries(workFigures(work))) figures[name] = (figures[name] ?? 0) + count;
        const problems = violations(outcome, store);
        if (problems.length === 0) continue;
        if (SURVEY) {
          failing++;
          for (const shape of new Set(problems.map((problem) => problem.shape))) {
            const entry = shapes.get(shape) ?? { schedules: 0, firstSeed: seed, example: problems.find((problem) => problem.shape === shape)!.text };
            entry.schedules++;
            shapes.set(shape, entry);
          }
          continue;
        }
        const messages = work.messages.map(
          (message) =>
            `${message.name}: ${JSON.stringify(message.target)} ${message.byRequestId ? 'key: the requestId' : `key ${message.key}`}, ${message.deliveries} deliveries${message.sameCaller ? ' of one call' : ''}`,
        );
        const calls = work.calls.map(
          (call) =>
            `${call.owner} (${call.message}) from ${call.startedAt}, read ${call.readAt ?? '-'}, answered at ${call.answeredAt ?? '-'}: ${JSON.stringify(call.answer)}`,
        );
        const records = work.records.map(
          (sent) =>
            `${sent.owner} lease ${sent.leaseId} ${sent.status} sent at ${sent.sentAt}${sent.heldAtSend ? ' holding' : ' not holding'}${sent.recordedBefore ? ', recorded before' : ''}: ${sent.answer} at ${sent.answeredAt ?? '-'}`,
        );
        const applied = work.applied.map(
          (record) =>
            `${record.owner} lease ${record.lease} ${record.status} ${JSON.stringify(record.result)} at ${record.at}, kept until ${record.keptUntil}${record.gone ? `, ${record.gone.how} at ${record.gone.at}` : ''}`,
        );
        const holds = outcome.holds.map(
          (hold) => `${hold.owner} ${hold.granularity} ${hold.call.mode} lease ${hold.leaseId} token ${hold.fencingToken} ${JSON.stringify(hold.segments)}`,
        );
        throw new Error(
          `seed ${seed} (replay: INTERLEAVING_SEED=${seed} INTERLEAVING_WORK_RUNS=1):\n${problems.map((problem) => `${problem.text} [${problem.shape}]`).join('\n')}\nmessages:\n${messages.join('\n')}\ncalls:\n${calls.join('\n')}\nrecords sent:\n${records.join('\n')}\nrecords applied:\n${applied.join('\n')}\nholds:\n${holds.join('\n')}\nlast steps:\n${scheduler.trace.join('\n')}`,
        );
      }
      if (process.env.INTERLEAVING_STATS || SURVEY) console.log({ runs: WORK_RUNS, ...figures });
      if (SURVEY && failing > 0) {
        const lines = [...shapes.entries()]
          .sort((a, b) => b[1].schedules - a[1].schedules)
          .map(([shape, entry]) => `${entry.schedules} schedules: ${shape} (first: seed ${entry.firstSeed}: ${entry.example})`);
        throw new Error(`${failing} of ${WORK_RUNS} schedules broke the work:\n${lines.join('\n')}`);
      }
      // The schedules did exercise the work: runs, results answered (many while a record was kept),
      // duplicates told in progress, late records refused, `failed` records, records that expired and were swept, and ran again.
      if (WORK_RUNS >= 200) {
        expect(figures.runs).toBeGreaterThan(WORK_RUNS * 2);
        expect(figures.recordedCompleted).toBeGreaterThan(WORK_RUNS / 2);
        // About one schedule in 15 (1,295 in a 20,000-schedule survey); 500 schedules once drew exactly 20.
        expect(figures.checkedAgainstARecord).toBeGreaterThan(WORK_RUNS / 50);
        expect(figures.inProgress).toBeGreaterThan(0);
        expect(figures.notRecorded).toBeGreaterThan(0);
        expect(figures.recordedFailed).toBeGreaterThan(0);
        expect(figures.ranAgainAfterExpiry).toBeGreaterThan(0);
        expect(figures.recordsSwept).toBeGreaterThan(0);
      }
    },
    SURVEY_TIMEOUT_MS,
  );

  it(
    `an adversarial client's forged tokens (fields changed, the MAC not matching; replayed on other targets and namespaces) renew, release and record nothing, with and without a signing key, over ${ADVERSARY_RUNS} schedules of the locks and of the work workloads`,
    async () => {
      let forged = 0;
      for (let run = 0; run < ADVERSARY_RUNS; run++) {
        const seed = FIRST_SEED + run;
        for (const kind of ['locks', 'work'] as const) {
          const { outcome, store, scheduler } = await runSchedule(seed, kind, CLOCKS, true);
          if (outcome.holds.some((hold) => hold.owner === 'forger')) forged++;
          const problems = violations(outcome, store);
          if (problems.length > 0) {
            throw new Error(
              `seed ${seed}, ${kind} workload with the forger (${seed % 2 === 0 ? 'signing key' : 'no signing key'}):\n${problems.map((problem) => problem.text).join('\n')}\nlast steps:\n${scheduler.trace.join('\n')}`,
            );
          }
        }
      }
      // The forger did hold a lock of its own to forge from, in most schedules.
      if (ADVERSARY_RUNS >= 20) expect(forged).toBeGreaterThan(ADVERSARY_RUNS);
    },
    SURVEY_TIMEOUT_MS,
  );

  it('beyond the clock skew bound, break: the bound is an assumption, and the checker sees what breaks', async () => {
    // Clocks spread over five times the allowance: a caller whose clock runs ahead takes over a lease
    // its holder, whose clock runs behind, still uses. Fixed seeds, so this demonstration is the same every run.
    const kinds = new Map<string, number>();
    for (let seed = 1; seed <= BEYOND_RUNS; seed++) {
      const { outcome, store } = await runSchedule(seed, 'locks', 'beyond');
      for (const kind of new Set(violations(outcome, store).map((problem) => problem.text.split(':')[0]!))) kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    if (process.env.INTERLEAVING_STATS || SURVEY) console.log({ beyondTheBound: BEYOND_RUNS, schedulesBroken: Object.fromEntries(kinds) });
    expect(kinds.get('mutual exclusion') ?? 0).toBeGreaterThan(0);
  }, 300_000);
});
