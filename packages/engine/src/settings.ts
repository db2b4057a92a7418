/** Engine settings: frozen defaults, partial overrides. */
import type { WakeNotifier } from './wake.js';

export interface LockSettings {
  ttl: { defaultMs: number; minMs: number; maxMs: number };
  /**
   * The largest clock difference assumed between any two callers. Another caller may take over a
   * lease only once its own clock reads expiresAt + maxClockSkewMs.
   */
  maxClockSkewMs: number;
  /** Upper bound accepted for `waitMs`. */
  maxWaitMs: number;
  /**
   * Backoff while waiting for a held lock: full jitter between base and cap, doubling. `watchAbove`:
   * a caller refused by a lock above its target (a directory over its file, the namespace's global
   * lock) watches that lock's document and tries again once it is free, instead of backing off.
   */
  retry: { baseDelayMs: number; maxDelayMs: number; watchAbove: boolean };
  /** Cap on the retryAfterMs suggested in a conflict (a lease may be released long before it expires). */
  maxRetryAfterMs: number;
  /**
   * How long one call keeps re-reading and re-writing when other writers race on the same documents
   * (compatible holders of a hot ancestor, say: not a lock conflict) before it gives up with
   * LockContentionError. Each round lets at least one racer through, so N racers need about N rounds.
   */
  contentionBudgetMs: number;
  limits: {
    /** The largest `permits.limit` of a semaphore (docs/permits.md). */
    permitsMax: number;
    namespaceMax: number;
    idsPerRequest: number;
    idBytes: number;
    pathBytes: number;
    pathDepth: number;
    segmentBytes: number;
    ownerMax: number;
    requestIdMax: number;
    /** An idempotency key's length (only its hash is stored). */
    idempotencyKeyMax: number;
  };
  sweep: { batchSize: number; maxBatches: number };
  /**
   * How a lock with locks below it (a marked directory, a namespace's root) makes its own write
   * searchable before it searches below. Unset: it forces a refresh of the lock index. Set to the lock
   * index's `refresh_interval` (in ms, which the operator sets to this value): it waits for the
   * scheduled refresh instead, one shared by every lock then searching, polling its search a few
   * times per interval and forcing a refresh only after two intervals without one.
   */
  scheduledRefreshMs?: number;
  /**
   * Optional HMAC key. When set, lease tokens carry a signed note of the holder's last write so that
   * release of an exclusive lease is one conditional delete instead of a read plus a delete.
   */
  tokenSigningKey?: Uint8Array;
  /**
   * Fair queues (queue.ts). `ticketTtlMs`: how long a waiter woken by a channel may wait by default,
   * and at most. `pollMs`: how often a waiter in the call looks for its turn (it also serves the
   * queue when the holder's lease has run out, so it bounds how late after an expiry a waiter is
   * served). `claimWindowMs`: how long the lock stays reserved for the waiter at the head before the
   * next one is served (a waiter woken by a channel claims it within this). `rewakeAfterMs`: a
   * reserved channel waiter that has not claimed after this long is woken again by the sweeper.
   * `retryBlockedMs`: a waiter whose claim found something above or below the target still blocking
   * it goes back to the head of the queue, unreserved, for this long.
   * The bounds of one lock's queue, so that its document (rewritten whole by every write) stays small:
   * `maxTickets` live tickets at most (a waiter past it is refused with QueueFullError, nothing
   * written), each waiting `ticketTtlMs.maxMs` at most, each wake channel (task token, queue URL,
   * bus) `wakeBytes` of UTF-8 at most. A ticket takes about its wake channel plus 300 bytes.
   */
  queue: {
    ticketTtlMs: { defaultMs: number; maxMs: number };
    maxTickets: number;
    wakeBytes: number;
    pollMs: { minMs: number; maxMs: number };
    claimWindowMs: number;
    rewakeAfterMs: number;
    retryBlockedMs: number;
  };
  /**
   * Completion records (operations/work.ts): how long a recorded outcome is kept by default and at
   * most (the caller chooses within), and the largest result stored inline (JSON bytes); a larger
   * result is stored elsewhere and recorded by reference; and the largest `event` an acquire may
   * carry to name its work by (canonical JSON bytes, wire/event-path.ts).
   */
  work: { recordTtlMs: { defaultMs: number; minMs: number; maxMs: number }; resultBytes: number; eventBytes: number };
  /** An operator's revoke and drain (operations/revoke.ts): how long their audit documents are kept, and the longest reason. */
  admin: { auditRetentionMs: number; reasonMax: number };
  /** Tells waiters woken by a channel (wake.ts). Without one, an acquire with `wake` is refused. */
  notifier?: WakeNotifier;
  now: () => number;
  /** How the engine waits between rounds and attempts (a test's scheduler can take it over). */
  sleep: (ms: number) => Promise<void>;
}

export const DEFAULT_SETTINGS: Readonly<LockSettings> = Object.freeze({
  ttl: Object.freeze({ defaultMs: 30_000, minMs: 1_000, maxMs: 900_000 }),
  maxClockSkewMs: 500,
  maxWaitMs: 60_000,
  retry: Object.freeze({ baseDelayMs: 25, maxDelayMs: 1_000, watchAbove: true }),
  maxRetryAfterMs: 1_000,
  contentionBudgetMs: 2_000,
  limits: Object.freeze({
    permitsMax: 1_000,
    namespaceMax: 64,
    idsPerRequest: 500,
    idBytes: 512,
    pathBytes: 2_048,
    pathDepth: 32,
    segmentBytes: 255,
    ownerMax: 128,
    requestIdMax: 256,
    idempotencyKeyMax: 512,
  }),
  sweep: Object.freeze({ batchSize: 500, maxBatches: 20 }),
  queue: Object.freeze({
    ticketTtlMs: Object.freeze({ defaultMs: 300_000, maxMs: 86_400_000 }),
    // Waiters in the call (waitMs) take tickets too. The most this project puts on one lock is the
    // load kit's 100 VUs, so 1,000 never refuses its own load, and bounds a document at about
    // 1,000 x (2,048 + 300) bytes, 2.3 MB, with every ticket at the largest wake channel.
    maxTickets: 1_000,
    // A Step Functions task token is at most 2,048 characters (ASCII); an SQS queue URL or a bus ARN fits.
    wakeBytes: 2_048,
    pollMs: Object.freeze({ minMs: 10, maxMs: 200 }),
    claimWindowMs: 75_000,
    rewakeAfterMs: 10_000,
    retryBlockedMs: 1_000,
  }),
  work: Object.freeze({ recordTtlMs: Object.freeze({ defaultMs: 86_400_000, minMs: 1_000, maxMs: 2_592_000_000 }), resultBytes: 32_768, eventBytes: 262_144 }),
  admin: Object.freeze({ auditRetentionMs: 90 * 86_400_000, reasonMax: 512 }),
  now: () => Date.now(),
  sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
}) as Readonly<LockSettings>;

/**
 * The settings one process's decisions assume of every other process on the same lock index, so one
 * value for all of them: recorded with the lock index when it is made (LockStore.sharedSettings) and
 * taken from there by every engine, each named with the environment variable that sets it.
 * `maxClockSkewMs`: whoever judges another process's lease, ticket, reservation or record adds it to
 * an instant that process wrote by its own clock, and that process renews and claims counting on the
 * same allowance. The other timings (claim window, re-wake, retry after a blocked claim, ticket and
 * record TTLs) are each turned into an instant or a count that the deciding process writes into the
 * document, and the others read it from there: no process assumes another's value of them.
 */
export const SHARED_SETTINGS = { maxClockSkewMs: 'MAX_CLOCK_SKEW_MS' } as const;

export type SharedSettingName = keyof typeof SHARED_SETTINGS;

/** Values of the shared settings: as a lock index records them, or as a process was given them. */
export type SharedSettings = { [Name in SharedSettingName]?: number };

/** The shared settings among `overrides` (what a process was explicitly given). */
export const sharedSettingsOf = (overrides: SettingsOverrides): SharedSettings =>
  Object.fromEntries(
    Object.keys(SHARED_SETTINGS).flatMap((name) => {
      const value = overrides[name as SharedSettingName];
      return value === undefined ? [] : [[name, value]];
    }),
  );

/** The shared settings of `settings`, every one of them (what a new lock index records). */
export const allSharedSettings = (settings: SharedSettings = {}): Required<SharedSettings> =>
  Object.fromEntries(
    Object.keys(SHARED_SETTINGS).map((name) => [name, settings[name as SharedSettingName] ?? DEFAULT_SETTINGS[name as SharedSettingName]]),
  ) as Required<SharedSettings>;

export type SettingsOverrides = Partial<Omit<LockSettings, 'ttl' | 'retry' | 'limits' | 'sweep' | 'queue' | 'work' | 'admin'>> & {
  work?: Partial<LockSettings['work']>;
  admin?: Partial<LockSettings['admin']>;
  queue?: Partial<LockSettings['queue']>;
  ttl?: Partial<LockSettings['ttl']>;
  retry?: Partial<LockSettings['retry']>;
  limits?: Partial<LockSettings['limits']>;
  sweep?: Partial<LockSettings['sweep']>;
};

export function resolveSettings(overrides: SettingsOverrides = {}): Readonly<LockSettings> {
  const settings: LockSettings = {
    ...DEFAULT_SETTINGS,
    ...overrides,
    // Left undefined: the default (a shared setting then taken from the lock index, shared-settings.ts).
    maxClockSkewMs: overrides.maxClockSkewMs ?? DEFAULT_SETTINGS.maxClockSkewMs,
    ttl: { ...DEFAULT_SETTINGS.ttl, ...overrides.ttl },
    retry: { ...DEFAULT_SETTINGS.retry, ...overrides.retry },
    limits: { ...DEFAULT_SETTINGS.limits, ...overrides.limits },
    sweep: { ...DEFAULT_SETTINGS.sweep, ...overrides.sweep },
    queue: { ...DEFAULT_SETTINGS.queue, ...overrides.queue },
    work: { ...DEFAULT_SETTINGS.work, ...overrides.work },
    admin: { ...DEFAULT_SETTINGS.admin, ...overrides.admin },
  };
  const { ttl } = settings;
  if (!(ttl.minMs >= 1 && ttl.minMs <= ttl.defaultMs && ttl.defaultMs <= ttl.maxMs)) {
    throw new RangeError(`ttl settings must satisfy 1 <= minMs <= defaultMs <= maxMs (got ${JSON.stringify(ttl)})`);
  }
  if (settings.maxClockSkewMs < 0) throw new RangeError('maxClockSkewMs must be >= 0');
  if (settings.scheduledRefreshMs !== undefined && !(settings.scheduledRefreshMs >= 1 && settings.scheduledRefreshMs <= 60_000)) {
    throw new RangeError('scheduledRefreshMs must be between 1 and 60000 (the lock index refresh_interval, in ms)');
  }
  checkQueueBounds(settings.queue);
  if (settings.tokenSigningKey && settings.tokenSigningKey.byteLength < 16) {
    throw new RangeError('tokenSigningKey must be at least 16 bytes');
  }
  return Object.freeze(settings);
}

/** The queue's bounds: whole numbers of at least one, a default ticket lease within its maximum. */
function checkQueueBounds(queue: LockSettings['queue']): void {
  const { maxTickets, wakeBytes, ticketTtlMs } = queue;
  if (!(Number.isInteger(maxTickets) && maxTickets >= 1)) throw new RangeError(`queue.maxTickets must be an integer >= 1 (got ${maxTickets})`);
  if (!(Number.isInteger(wakeBytes) && wakeBytes >= 1)) throw new RangeError(`queue.wakeBytes must be an integer >= 1 (got ${wakeBytes})`);
  if (!(ticketTtlMs.defaultMs >= 1 && ticketTtlMs.defaultMs <= ticketTtlMs.maxMs)) {
    throw new RangeError(`queue.ticketTtlMs must satisfy 1 <= defaultMs <= maxMs (got ${JSON.stringify(ticketTtlMs)})`);
  }
}
