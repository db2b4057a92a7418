/**
 * settings.scheduledRefreshMs: a directory lock that waits for the lock index's scheduled refresh
 * instead of forcing one still finds every lock below written before its own write (its search counts
 * only once it shows that write), and forces a refresh when none came within two intervals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError } from '../../packages/engine/src/errors.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { BelowQuery } from '../../packages/engine/src/store.js';
import { interpose } from '../../tools/shared/interposed-store.js';
import { closeTestClient, freshLockIndex, testClient } from '../support/engine.js';
import { tree } from '../support/targets.js';

let client: SearchClient;
beforeAll(() => {
  client = testClient();
});
afterAll(async () => closeTestClient(client));

/** An engine waiting for the scheduled refresh on a fresh lock index refreshed every `indexRefresh`, recording its searches. */
async function scheduledEngine(indexRefresh: string, scheduledRefreshMs: number): Promise<{ engine: LockService; searches: BelowQuery[] }> {
  const index = await freshLockIndex(client, 'scheduled');
  await client.indices.putSettings({ index, settings: { refresh_interval: indexRefresh } });
  const searches: BelowQuery[] = [];
  const store = interpose(new ElasticsearchLockStore(client, index), {
    findLiveBelow: async (query, next) => {
      searches.push(query);
      return next(query);
    },
  });
  return { engine: new LockService(store, { maxClockSkewMs: 50, scheduledRefreshMs }), searches };
}

describe('waiting for the scheduled refresh', () => {
  it('finds the file lock written just before the directory lock, without forcing a refresh', async () => {
    const { engine, searches } = await scheduledEngine('50ms', 50);
    const first = await engine.acquire(tree('scheduled', '/p/first', 'writer'));
    await engine.release({ leaseToken: first.leaseToken });
    const file = await engine.acquire(tree('scheduled', '/p/f', 'writer'));
    await expect(engine.acquire(tree('scheduled', '/p', 'renamer'))).rejects.toBeInstanceOf(LockHeldError);
    expect(searches.length).toBeGreaterThan(0);
    expect(searches.every((query) => query.refresh === false)).toBe(true);
    await engine.release({ leaseToken: file.leaseToken });
  });

  it('forces a refresh when the scheduled one does not come within two intervals (an index refreshed less often than the setting says)', async () => {
    const { engine, searches } = await scheduledEngine('-1', 20);
    const first = await engine.acquire(tree('scheduled-off', '/p/first', 'writer'));
    await engine.release({ leaseToken: first.leaseToken });
    const file = await engine.acquire(tree('scheduled-off', '/p/f', 'writer'));
    await expect(engine.acquire(tree('scheduled-off', '/p', 'renamer'))).rejects.toBeInstanceOf(LockHeldError);
    expect(searches.filter((query) => query.refresh === false)).toHaveLength(8);
    expect(searches.at(-1)!.refresh).toBeUndefined();
    await engine.release({ leaseToken: file.leaseToken });
  });
});
