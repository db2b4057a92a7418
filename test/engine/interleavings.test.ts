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
 * A failure prints its seed; replay it with INTERLEAVING_SEED=<seed> INTERLEAVING_RUNS=1 (the
 * engine's own jitter is seeded too). INTERLEAVING_SURVEY=1 runs every schedule and counts the
 * violations by the circumstances of the holds involved, instead of stopping at the first;
 * INTERLEAVING_STALE_READS=<rate> and INTERLEAVING_NESTING=off override the two settings below.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it, vi } from 'vitest';
import { LeaseLostError, LeaseTokenMismatchError, LockContentionError, LockOutcomeUnknownError, StoreUnavailableError } from '../../functions/core/errors.js';
import { compareFencingTokens } from '../../functions/core/fencing.js';
import { lockDocId } from '../../functions/core/keys.js';
import type { Grant, GrantedKey, HolderMode, RequestedMode } from '../../functions/core/model.js';
import { LockService } from '../../functions/core/service.js';
import type { StoredLock } from '../../functions/core/store.js';
import { MemoryLockStore } from '../support/memory-store.js';
import { type CopyEpisodes, Scheduler, type StaleAnswer, scheduledStore, seededRandom } from '../support/scheduler.js';

const RUNS = Number(process.env.INTERLEAVING_RUNS ?? 3_000);
const FIRST_SEED = Number(process.env.INTERLEAVING_SEED ?? Math.floor(Math.random() * 1e9));
const SURVEY = process.env.INTERLEAVING_SURVEY !== undefined;
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

/** The README's compatibility table, written out again: the checker must not share the engine's copy. */
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
}

/** Who is running (a client's delivery, the thief, ...): the trace names it on each step. */
const actors = new AsyncLocalStorage<string>();

async function runSchedule(seed: number): Promise<{ outcome: Outcome; store: MemoryLockStore; scheduler: Scheduler }> {
  const scheduler = new Scheduler(seed);
  scheduler.actor = () => actors.getStore();
  // A replay of one seed shows every step.
  if (RUNS === 1) scheduler.traceLength = Number.POSITIVE_INFINITY;
  const memory = new MemoryLockStore();
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
  };
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
  const engine = new LockService(store, {
    now: () => scheduler.now,
    sleep: scheduler.sleep,
    maxClockSkewMs: SKEW,
    ttl: { minMs: 1, defaultMs: 300, maxMs: 10_000 },
    contentionBudgetMs: 150,
    retry: { baseDelayMs: 5, maxDelayMs: 40 },
    maxRetryAfterMs: 40,
    ...(seed % 2 === 0 ? { tokenSigningKey: Buffer.alloc(32, 5) } : {}),
  });

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
        outcome.granted.add(owner);
        outcome.failed.delete(owner);
        const hold: Hold = {
          owner,
          token: grant.leaseToken,
          leaseId: grant.leaseId,
          granularity: target.granularity,
          fencingToken: grant.fencingToken,
          keys: coveredKeys(target, mode, grant),
          grantedKeys: grant.keys,
          segments: [[scheduler.now, grant.expiresAt]],
          lateRenewals: new Set(),
          staleRenewals: new Set(),
          staleAcquire: misled(grant.leaseId),
          staleLoss: false,
          call,
        };
        outcome.holds.push(hold);
        await checkBacked(hold, grant.keys, grant.expiresAt, 'grant');
        return hold;
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

  /**
   * A grant or renewal must stand on the primary when it is handed out (no other step runs between
   * the engine's last store call and here): every document it names holds the lease there, at least
   * until the expiry told. Only another delivery of the same call may have taken it over meanwhile
   * (its holder then stands there: the same owner and requestId). This catches a grant that rests on
   * a stale read at once, whether or not a conflicting lock comes along while it is held.
   */
  async function checkBacked(hold: Hold, keys: readonly GrantedKey[], expiresAt: number, what: 'grant' | 'renewal'): Promise<void> {
    // One that is over already (a renewal that came back too late) holds nothing to back.
    if (expiresAt <= scheduler.now) return;
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
      try {
        const renewal = await engine.renew({ leaseToken, ttlMs: call.ttlMs });
        leaseToken = renewal.leaseToken;
        if (sentLate) hold.lateRenewals.add(hold.segments.length);
        if (misled(hold.leaseId).size > 0) hold.staleRenewals.add(hold.segments.length);
        hold.segments.push([scheduler.now, renewal.expiresAt]);
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

  const everyone = [...[0, 1, 2, 3].map((id) => client(id)), actors.run('thief', thief), actors.run('sweeper', sweeper), actors.run('failover', failover)];
  // The engine's jitter (backoff, contention pauses) comes from the seed too, so that a seed replays its schedule.
  const jitter = vi.spyOn(Math, 'random').mockImplementation(seededRandom(seed ^ 0x5bd1e995));
  try {
    await scheduler.run(Promise.all(everyone));
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

/** Everything that must hold after a schedule; an empty list when it did. */
function violations(outcome: Outcome, store: MemoryLockStore): Violation[] {
  const found: Violation[] = outcome.problems.map((text) => ({ text, shape: 'problem' }));
  for (const { hold, text } of outcome.unbacked) found.push({ text, shape: `unbacked: ${shapeOf([hold], [hold.call])}` });
  // Two deliveries of one call (same owner, same requestId): the later insertion takes the earlier
  // grant over (its fencing token is larger; judged on each grant's largest), so the earlier one
  // holds only until the later is granted.
  for (const a of outcome.holds) {
    for (const b of outcome.holds) {
      if (a === b || a.owner !== b.owner || compareFencingTokens(a.fencingToken, b.fencingToken) >= 0) continue;
      for (const segment of a.segments) segment[1] = Math.min(segment[1], b.segments[0]![0]);
    }
  }
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
        if (overlap.length > 0)
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

/**
 * Schedules that once broke the lock (found by a random first seed in CI or a survey), replayed every
 * run. 31007078: a release clearing a directory's mark while a file lock that had passed the run-out
 * holder lived below (found with the rule that such a file lock writes the directory switched off).
 */
const SEEDS_THAT_BROKE_IT = [500515, 871242137, 862121079, 31007078];

describe('interleavings of concurrent calls', () => {
  it('keep the lock in every schedule that once broke it', async () => {
    for (const seed of SEEDS_THAT_BROKE_IT) {
      const { outcome, store } = await runSchedule(seed);
      expect(violations(outcome, store).map((problem) => `seed ${seed}: ${problem.text}`)).toEqual([]);
    }
  });

  it(`keep mutual exclusion, fencing order, all-or-nothing, backed grants and holder-only renew/release over ${RUNS} schedules`, async () => {
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
          ([shape, entry]) => `${((entry.schedules * 1000) / RUNS).toFixed(1)} per 1000 schedules: ${shape} (first: seed ${entry.firstSeed}: ${entry.example})`,
        );
      throw new Error(`${failing} of ${RUNS} schedules broke the lock:\n${lines.join('\n')}`);
    }
    // The schedules did exercise the lock: many grants, and some outcomes only a requestId could recover.
    expect(grants).toBeGreaterThan(RUNS * 3);
    if (RUNS >= 500) expect(unknown).toBeGreaterThan(0);
  }, 300_000);
});
