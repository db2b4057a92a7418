/**
 * A local lock table: callers in one process that want the same lock queue here, in memory, so that
 * only the one at the head of the line talks to Elasticsearch. Without it, ten records of one SQS
 * batch that touch two keys send ten acquires at once: two win, eight are refused, back off and try
 * again, each try a create and a read. With it, two acquires go out, and each next holder of a key
 * asks only once the one before it has released.
 *
 *   const locks = new LockClient({ transport, localTable: new LocalLockTable() });  // module scope: one per process
 *   await locks.using(request, work, { waitMs: 5_000 });
 *
 * What it queues on: the lock documents the service takes for the request (local-keys.ts: the same
 * ids, in the same Unicode form), plus, for a tree lock, its ancestors in the intention mode (IS / IX),
 * with the service's compatibility table. So shared with shared goes through side by side; a lock on /a
 * waits for an incompatible one on /a/b and the other way round (an X on /a meets the IX of /a/b on
 * /a); writers in different subtrees do not wait for each other.
 *
 * Rules:
 * - all or nothing: a request takes every one of its keys at the same moment or none (no partial
 *   holds, so multi-key requests cannot deadlock each other here);
 * - first come, first served: a waiter is let in only when it is compatible with the holders and
 *   with every earlier waiter of each of its keys, so a stream of shared requests cannot starve an
 *   exclusive one, and the oldest waiter always waits for holders only;
 * - bounded: at most `maxQueued` waiters per key; one more is refused at once;
 * - the same timeouts: a caller waits here at most its `waitMs` (0: not at all) and then fails with
 *   the LockHeldError the service would have given, naming the local holders; the client passes what
 *   is left of `waitMs` on to the service.
 *
 * The table only spares the lock service requests that would have been refused: it never grants a
 * lock by itself. Callers in other processes still meet in Elasticsearch. Share one table per lock
 * service (one lock index): requests for another service on the same names would wait needlessly.
 */
import { LockHeldError } from './errors.js';
import { compatible, type LocalKey, localKeysOf } from './local-keys.js';
import type { AcquireBody, ConflictBody, Granularity, HolderMode } from './wire.js';

export type { LocalKey } from './local-keys.js';

export interface LocalLockTableSettings {
  /** Waiters per key. A request that would be one more is refused at once (LockHeldError). */
  maxQueued: number;
  /** The `retryAfterMs` of a local refusal: local holders usually hold for one piece of work. */
  retryAfterMs: number;
}

export const DEFAULT_LOCAL_LOCK_TABLE_SETTINGS: Readonly<LocalLockTableSettings> = Object.freeze({
  maxQueued: 100,
  retryAfterMs: 100,
});

export interface LocalSlot {
  /** Gives the local slot up (idempotent): the next compatible waiters get in. Call it after the lease is released. */
  release(): void;
  /** What the table tells other local callers about this holder's lease (epoch ms). */
  leaseEndsAt(expiresAtMs: number): void;
  /** How long the caller queued here (0 when it got in at once). */
  readonly waitedMs: number;
}

export interface LocalEnterOptions {
  /** How long to queue at most; default: the request's `waitMs`, else 0 (refused at once when a local holder conflicts). */
  waitMs?: number;
  /** Aborting it takes the caller out of the queue (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
}

export interface LocalLockTableStats {
  /** Keys with holders or waiters now. */
  keys: number;
  holders: number;
  waiting: number;
  /** Since the table was made: let in at once, let in after queueing, refused because a queue was full, gave up after waitMs (or were aborted). */
  entered: number;
  queued: number;
  refusedFull: number;
  timedOut: number;
}

interface Holder {
  owner: string;
  keys: LocalKey[];
  expiresAt: number;
}

interface Waiter extends Holder {
  seq: number;
  grant(): void;
}

interface Entry {
  granularity: Granularity;
  key: string;
  holders: Map<Holder, HolderMode>;
  /** In arrival order. */
  waiting: Map<Waiter, HolderMode>;
}

export class LocalLockTable {
  readonly settings: Readonly<LocalLockTableSettings>;
  private readonly entries = new Map<string, Entry>();
  private seq = 0;
  private readonly counts = { entered: 0, queued: 0, refusedFull: 0, timedOut: 0 };

  constructor(settings: Partial<LocalLockTableSettings> = {}) {
    const resolved = { ...DEFAULT_LOCAL_LOCK_TABLE_SETTINGS, ...settings };
    if (!(Number.isInteger(resolved.maxQueued) && resolved.maxQueued >= 0)) throw new RangeError('maxQueued must be an integer >= 0');
    if (!(resolved.retryAfterMs >= 0)) throw new RangeError('retryAfterMs must be >= 0');
    this.settings = Object.freeze(resolved);
  }

  /**
   * Takes a local slot for every key of the request, all at once, waiting in line up to `waitMs`.
   * Rejects with LockHeldError when a local holder conflicts and the wait runs out (at once with no
   * wait, or when a key's queue is full), or with the signal's reason when it aborts.
   */
  enter(request: AcquireBody, options: LocalEnterOptions = {}): Promise<LocalSlot> {
    const started = performance.now();
    options.signal?.throwIfAborted();
    const keys = localKeysOf(request);
    const holder: Holder = { owner: request.owner, keys, expiresAt: 0 };
    const asked = options.waitMs ?? request.waitMs ?? 0;
    // Timers take at most 2^31 - 1 ms; anything longer (or Infinity) waits that long.
    const waitMs = Number.isNaN(asked) ? 0 : Math.min(Math.max(0, asked), 2 ** 31 - 1);

    if (this.admits(keys, Number.POSITIVE_INFINITY)) {
      this.hold(holder);
      this.counts.entered++;
      return Promise.resolve(this.slotOf(holder, 0));
    }
    if (waitMs === 0) return Promise.reject(this.refusal(keys, Number.POSITIVE_INFINITY, 'held (or queued for) by another caller in this process', 0));
    const full = keys.find((key) => (this.entries.get(key.id)?.waiting.size ?? 0) >= this.settings.maxQueued);
    if (full) {
      this.counts.refusedFull++;
      return Promise.reject(
        this.refusal(keys, Number.POSITIVE_INFINITY, `the local queue of ${full.key} is full (${this.settings.maxQueued} waiting in this process)`, 0),
      );
    }

    return new Promise<LocalSlot>((resolve, reject) => {
      const { signal } = options;
      const leave = (error: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.dequeue(waiter);
        this.counts.timedOut++;
        reject(error);
      };
      const onAbort = () => leave(signal?.reason);
      const waiter: Waiter = {
        ...holder,
        seq: ++this.seq,
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          this.counts.queued++;
          resolve(this.slotOf(waiter, performance.now() - started));
        },
      };
      const timer = setTimeout(() => {
        leave(this.refusal(keys, waiter.seq, `held (or queued for) by another caller in this process; gave up after waiting ${Math.round(waitMs)} ms`, waitMs));
      }, waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      for (const key of keys) this.entry(key).waiting.set(waiter, key.mode);
    });
  }

  stats(): LocalLockTableStats {
    const waiting = new Set<Waiter>();
    const holding = new Set<Holder>();
    for (const entry of this.entries.values()) {
      for (const holder of entry.holders.keys()) holding.add(holder);
      for (const waiter of entry.waiting.keys()) waiting.add(waiter);
    }
    return { keys: this.entries.size, holders: holding.size, waiting: waiting.size, ...this.counts };
  }

  /** Whether a request with these keys, arriving as `seq`, may hold now: compatible with every holder and every earlier waiter. */
  private admits(keys: readonly LocalKey[], seq: number): boolean {
    return keys.every((key) => this.blockers(key, seq).length === 0);
  }

  /** Who stands in a key's way: incompatible holders, or, when there are none, incompatible earlier waiters. */
  private blockers(key: LocalKey, seq: number): Array<{ holder: Holder; mode: HolderMode }> {
    const entry = this.entries.get(key.id);
    if (!entry) return [];
    const found: Array<{ holder: Holder; mode: HolderMode }> = [];
    for (const [holder, mode] of entry.holders) if (!compatible(key.mode, mode)) found.push({ holder, mode });
    if (found.length > 0) return found;
    for (const [waiter, mode] of entry.waiting) if (waiter.seq < seq && !compatible(key.mode, mode)) found.push({ holder: waiter, mode });
    return found;
  }

  private refusal(keys: readonly LocalKey[], seq: number, why: string, waitedMs: number): LockHeldError {
    const conflicts: ConflictBody[] = keys.flatMap((key) => {
      const blockers = this.blockers(key, seq);
      if (blockers.length === 0) return [];
      return [
        {
          key: key.key,
          granularity: key.granularity,
          requestedMode: key.mode,
          holders: blockers.map(({ holder, mode }) => ({
            owner: holder.owner,
            mode,
            expiresAt: new Date(holder.expiresAt).toISOString(),
            expiresAtMs: holder.expiresAt,
          })),
        },
      ];
    });
    const named = conflicts.map((conflict) => `${conflict.key} (${conflict.holders.map((holder) => `${holder.mode} by ${holder.owner}`).join(', ')})`);
    return new LockHeldError(
      {
        conflicts,
        retryAfterMs: this.settings.retryAfterMs,
        ...(waitedMs > 0 ? { waitedMs: Math.round(waitedMs) } : {}),
      },
      `Lock ${why}: ${named.join('; ') || keys.map((key) => key.key).join(', ')}`,
    );
  }

  private entry(key: LocalKey): Entry {
    let entry = this.entries.get(key.id);
    if (!entry) {
      entry = { granularity: key.granularity, key: key.key, holders: new Map(), waiting: new Map() };
      this.entries.set(key.id, entry);
    }
    return entry;
  }

  private hold(holder: Holder): void {
    for (const key of holder.keys) this.entry(key).holders.set(holder, key.mode);
  }

  private slotOf(holder: Holder, waitedMs: number): LocalSlot {
    let released = false;
    return {
      waitedMs,
      leaseEndsAt: (expiresAtMs) => {
        holder.expiresAt = expiresAtMs;
      },
      release: () => {
        if (released) return;
        released = true;
        for (const key of holder.keys) this.entries.get(key.id)?.holders.delete(holder);
        this.pump(holder.keys);
      },
    };
  }

  private dequeue(waiter: Waiter): void {
    for (const key of waiter.keys) this.entries.get(key.id)?.waiting.delete(waiter);
    // A waiter that leaves may have been the only thing in the way of later ones.
    this.pump(waiter.keys);
  }

  /** Lets in, oldest first, every waiter of these keys that now may hold; forgets keys nobody holds or waits for. */
  private pump(keys: readonly LocalKey[]): void {
    const candidates = new Set<Waiter>();
    for (const key of keys) for (const waiter of this.entries.get(key.id)?.waiting.keys() ?? []) candidates.add(waiter);
    for (const waiter of [...candidates].sort((a, b) => a.seq - b.seq)) {
      if (!this.admits(waiter.keys, waiter.seq)) continue;
      for (const key of waiter.keys) this.entries.get(key.id)?.waiting.delete(waiter);
      this.hold(waiter);
      waiter.grant();
    }
    for (const key of keys) {
      const entry = this.entries.get(key.id);
      if (entry && entry.holders.size === 0 && entry.waiting.size === 0) this.entries.delete(key.id);
    }
  }
}
