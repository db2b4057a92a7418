/**
 * The operator's CLI straight against the cluster takes the clock-skew allowance of the lock index
 * (recorded when it was made), as the functions do: with the functions at 20 s of skew, a sweep with
 * nothing set must not delete a lock whose holder's clock may still read it live.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { deleteLockIndex, ElasticsearchLockStore, ensureLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { storeUrlVariable } from '../../infra/lib/store-target.js';
import { engineOn, sleep, testClient } from '../support/engine.js';
import { ops } from './support.js';

const SKEW_MS = 20_000;
const product = inject('searchProduct');
let client: SearchClient;
let index: string;
let target: string[];

beforeAll(async () => {
  client = testClient();
  index = `locks-test-shared-ops-${randomBytes(4).toString('hex')}`;
  // Made as index:create makes it with MAX_CLOCK_SKEW_MS=20000, the functions' value.
  await ensureLockIndex(client, index, { sharedSettings: { maxClockSkewMs: SKEW_MS } });
  process.env[storeUrlVariable(product)] = inject('esUrl');
  if (product === 'elasticsearch' && inject('esApiKey')) process.env.ES_API_KEY = inject('esApiKey');
  target = ['--store', product, '--index', index];
});
afterAll(async () => {
  await deleteLockIndex(client, index);
  await client.close();
});

describe('the shared clock-skew allowance', () => {
  // fails on main: the CLI swept with its own 500 ms, deleted the lock, and the next caller was granted it.
  it("sweep with nothing set uses the lock index's 20 s; with another MAX_CLOCK_SKEW_MS it refuses in one line naming both", async () => {
    const lock = { namespace: 'shared-ops', granularity: 'document' as const, ids: ['k'] };
    // A holder of the functions (20 s of skew): its lease ran out by the sweeper's clock, maybe not by its own.
    const functions = engineOn(client, index, { maxClockSkewMs: SKEW_MS });
    await functions.acquire({ ...lock, owner: 'holder', ttlMs: 1_000 });
    await sleep(1_000 + 500 + 300);
    await client.indices.refresh({ index });

    const swept = await ops(['sweep', '--json', ...target], { MAX_CLOCK_SKEW_MS: undefined });
    expect(swept.code, swept.err).toBe(0);
    expect(JSON.parse(swept.out)).toMatchObject({ deletedLocks: 0, prunedHolders: 0 });
    const next = await engineOn(client, index, { maxClockSkewMs: undefined })
      .acquire({ ...lock, owner: 'next', ttlMs: 1_000 })
      .catch((error: unknown) => error);
    expect(next).toMatchObject({ name: 'LockHeldError' });

    const refused = await ops(['sweep', ...target], { MAX_CLOCK_SKEW_MS: '500' });
    expect(refused.code).toBe(1);
    expect(refused.err.split('\n')).toEqual([
      `error: StoreRejectedError: MAX_CLOCK_SKEW_MS is 500 here but the lock index ${index} was made with ${SKEW_MS}: refusing to write (leave it unset to take the lock index's value)`,
    ]);
    const read = await new ElasticsearchLockStore(client, index).read(['shared-ops|d|k']);
    expect(read.get('shared-ops|d|k')?.body.holders.map((holder) => holder.owner)).toEqual(['holder']);
  });

  it('a bad MAX_CLOCK_SKEW_MS is a usage mistake', async () => {
    const run = await ops(['status', ...target], { MAX_CLOCK_SKEW_MS: 'soon' });
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/^error: MAX_CLOCK_SKEW_MS: .*\(see --help\)$/);
  });
});
