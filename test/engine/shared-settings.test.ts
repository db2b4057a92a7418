/**
 * Shared settings on the real node: a lock index records its clock-skew allowance when it is made,
 * every engine takes it from there, and an engine given another value refuses before writing.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { deleteLockIndex, ElasticsearchLockStore, ensureLockIndex, lockIndexIncarnation, recordSharedSettings } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockService } from '../../packages/engine/src/service.js';
import { DEFAULT_SETTINGS } from '../../packages/engine/src/settings.js';
import { testClient } from '../support/engine.js';

let client: SearchClient;
const made: string[] = [];
const newIndex = async (label: string, options: Parameters<typeof ensureLockIndex>[2] = {}): Promise<string> => {
  const index = `locks-test-shared-${label}-${randomBytes(4).toString('hex')}`;
  await ensureLockIndex(client, index, options);
  made.push(index);
  return index;
};
const lock = { namespace: 'shared', granularity: 'document' as const, ids: ['k'] };

beforeAll(() => {
  client = testClient();
});
afterAll(async () => {
  for (const index of made) await deleteLockIndex(client, index);
  await client.close();
});

describe('an engine on a lock index that records its shared settings', () => {
  it('takes the recorded value when given none, and refuses another one before it writes anything', async () => {
    const index = await newIndex('recorded', { sharedSettings: { maxClockSkewMs: 20_000 } });
    const taking = new LockService(new ElasticsearchLockStore(client, index));
    expect(taking.settings.maxClockSkewMs).toBe(DEFAULT_SETTINGS.maxClockSkewMs);
    expect((await taking.engine.ready()).maxClockSkewMs).toBe(20_000);
    expect(taking.settings.maxClockSkewMs).toBe(20_000);

    const other = new LockService(new ElasticsearchLockStore(client, index), { maxClockSkewMs: 500 });
    const refused = await other.acquire({ ...lock, owner: 'other' }).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      name: 'StoreRejectedError',
      message: `MAX_CLOCK_SKEW_MS is 500 here but the lock index ${index} was made with 20000: refusing to write (leave it unset to take the lock index's value)`,
    });
    expect(await taking.inspect(lock)).toEqual([]);
    // The same value, given explicitly, is no disagreement.
    const same = new LockService(new ElasticsearchLockStore(client, index), { maxClockSkewMs: 20_000 });
    await expect(same.acquire({ ...lock, owner: 'same', ttlMs: 1_000 })).resolves.toMatchObject({ leaseToken: expect.any(String) });
  });

  it('a lock index made before they were recorded: each engine keeps its own (said once), until index:create --record-settings records them', async () => {
    const index = await newIndex('legacy');
    const incarnation = (await lockIndexIncarnation(client, index))!;
    // What an earlier version made: no _meta entry.
    await client.indices.putMapping({ index: incarnation, _meta: {} });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const own = new LockService(new ElasticsearchLockStore(client, index), { maxClockSkewMs: 50 });
      expect((await own.engine.ready()).maxClockSkewMs).toBe(50);
      await own.acquire({ ...lock, owner: 'own', ttlMs: 1_000 });
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(/records no shared settings .*--record-settings/);
    } finally {
      warn.mockRestore();
    }
    await recordSharedSettings(client, incarnation, { maxClockSkewMs: DEFAULT_SETTINGS.maxClockSkewMs });
    const after = new LockService(new ElasticsearchLockStore(client, index), { maxClockSkewMs: 50 });
    await expect(after.inspect(lock)).rejects.toMatchObject({ name: 'StoreRejectedError', message: expect.stringMatching(/was made with 500/) });
  });
});
