/**
 * An engine on the real node that counts what it costs: every Elasticsearch request its client sends
 * (lock store and anything else on that client, e.g. fenced writes), the lock store's calls, the
 * writes Elasticsearch refused because another caller got there first (409: a create on a held key,
 * a conditional write on a changed document), the acquires callers started, how many were in flight
 * at once (overall and per lock document), and how many ended in LockHeldError.
 */

import { type AcquireBody, localKeysOf } from '@es-lease-locks/client';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError } from '../../packages/engine/src/errors.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { SettingsOverrides } from '../../packages/engine/src/settings.js';
import { interpose } from '../../tools/shared/interposed-store.js';

export interface Traffic {
  /** Every request the client sent to Elasticsearch. */
  esRequests: number;
  /** Of those, the lock store's (reads, primary reads, writes, searches below). */
  lockStoreCalls: number;
  /** Writes refused with a conflict: another caller held or had just changed the document. */
  writeConflicts: number;
  acquires: number;
  /** Acquires refused with LockHeldError (after their own waitMs). */
  acquiresRefused: number;
  maxAcquiresInFlight: number;
  maxAcquiresInFlightPerKey: number;
}

export class CountingEngine extends LockService {
  /** The `waitMs` each acquire asked the engine for, in call order. */
  readonly waits: Array<number | undefined> = [];
  private inFlight = 0;
  private readonly perKey = new Map<string, number>();
  private readonly counts: Traffic;
  private readonly store: ReturnType<typeof interpose>;

  constructor(
    readonly client: SearchClient,
    index: string,
    settings: SettingsOverrides = {},
  ) {
    const counts = CountingEngine.zero();
    const store = interpose(new ElasticsearchLockStore(client, index), {
      write: async (ops, next) => {
        const outcomes = await next(ops);
        counts.writeConflicts += outcomes.filter((outcome) => !outcome.ok && outcome.reason === 'conflict').length;
        return outcomes;
      },
    });
    super(store, { maxClockSkewMs: 50, ...settings });
    this.counts = counts;
    this.store = store;
    client.diagnostic.on('response', () => {
      this.counts.esRequests++;
    });
  }

  private static zero(): Traffic {
    return { esRequests: 0, lockStoreCalls: 0, writeConflicts: 0, acquires: 0, acquiresRefused: 0, maxAcquiresInFlight: 0, maxAcquiresInFlightPerKey: 0 };
  }

  override acquire(request: unknown): ReturnType<LockService['acquire']> {
    return this.counted(request, () => super.acquire(request));
  }

  /** Work named by an idempotency key (the SQS consumer's records) counts as an acquire too. */
  override acquireWork(request: unknown): ReturnType<LockService['acquireWork']> {
    return this.counted(request, () => super.acquireWork(request));
  }

  private async counted<T>(request: unknown, call: () => Promise<T>): Promise<T> {
    // Per key it takes itself: intentions on what is above (a shared directory, the namespace's root) are shared by design.
    const keys = localKeysOf(request as AcquireBody)
      .filter((key) => key.mode === 'X' || key.mode === 'S')
      .map((key) => key.id);
    this.waits.push((request as AcquireBody).waitMs);
    this.counts.acquires++;
    this.inFlight++;
    this.counts.maxAcquiresInFlight = Math.max(this.counts.maxAcquiresInFlight, this.inFlight);
    for (const key of keys) {
      const now = (this.perKey.get(key) ?? 0) + 1;
      this.perKey.set(key, now);
      this.counts.maxAcquiresInFlightPerKey = Math.max(this.counts.maxAcquiresInFlightPerKey, now);
    }
    try {
      return await call();
    } catch (error) {
      if (error instanceof LockHeldError) this.counts.acquiresRefused++;
      throw error;
    } finally {
      this.inFlight--;
      for (const key of keys) this.perKey.set(key, this.perKey.get(key)! - 1);
    }
  }

  /** The counts since the last reset. */
  traffic(): Traffic {
    const calls = this.store.calls;
    return { ...this.counts, lockStoreCalls: calls.read + calls.readPrimary + calls.write + calls.findLiveBelow };
  }

  reset(): void {
    Object.assign(this.counts, CountingEngine.zero());
    this.waits.length = 0;
    Object.assign(this.store.calls, { read: 0, readPrimary: 0, write: 0, findLiveBelow: 0 });
  }
}
