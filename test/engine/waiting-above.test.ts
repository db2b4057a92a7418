/**
 * A caller that may wait and is refused by a lock above its target (a directory lock over its file,
 * the namespace's global lock over its ids) watches that lock's document with reads and writes again
 * only once it is free; with `retry.watchAbove` off it retries its writes on a backoff. On the real
 * node; the interposed store only counts the engine's calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { compareFencingTokens } from '../../packages/engine/src/fencing.js';
import { type AcquireInput, LockService } from '../../packages/engine/src/service.js';
import { interpose } from '../../tools/shared/interposed-store.js';
import { closeTestClient, freshLockIndex, sleep, testClient } from '../support/engine.js';
import { tree } from '../support/targets.js';

let client: SearchClient;
let store: ElasticsearchLockStore;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  store = new ElasticsearchLockStore(client, await freshLockIndex(client, 'watch-above'));
  engine = new LockService(store);
});
afterAll(async () => closeTestClient(client));

function counting(watchAbove: boolean) {
  const watched = interpose(store, {});
  return { engine: new LockService(watched, { retry: { watchAbove } }), calls: watched.calls };
}

/**
 * Holds `blocker` while a counted waiter for `waiting` waits `windowMs`; returns the waiter's writes
 * and reads during that time, and its grant after the release.
 */
async function whileBlocked(watchAbove: boolean, blocker: AcquireInput, waiting: AcquireInput, windowMs = 600) {
  const held = await engine.acquire(blocker);
  const { engine: waiter, calls } = counting(watchAbove);
  const granted = waiter.acquire({ ...waiting, waitMs: 10_000 });
  await sleep(300);
  const before = { writes: calls.write, reads: calls.read };
  await sleep(windowMs);
  const during = { writes: calls.write - before.writes, reads: calls.read - before.reads };
  await engine.release({ leaseToken: held.leaseToken });
  const grant = await granted;
  await waiter.release({ leaseToken: grant.leaseToken });
  return { during, grant, held };
}

describe('waiting for a lock above', () => {
  it('a file under a directory lock watches the directory and writes nothing until it is released; then it is granted with a later token', async () => {
    const namespace = 'watch-directory';
    const { during, grant, held } = await whileBlocked(true, tree(namespace, '/p', 'renamer'), tree(namespace, '/p/f', 'editor'));
    expect(during.writes).toBe(0);
    expect(during.reads).toBeGreaterThan(0);
    expect(compareFencingTokens(grant.fencingToken, held.fencingToken)).toBeGreaterThan(0);
  });

  it('with watchAbove off, the same file retries its writes while the directory is held', async () => {
    // Longer than the backoff's longest pause (retry.maxDelayMs, 1 s), so that a loaded machine still shows a retry in it.
    const { during } = await whileBlocked(false, tree('backoff-directory', '/p', 'renamer'), tree('backoff-directory', '/p/f', 'editor'), 2_500);
    expect(during.writes).toBeGreaterThan(0);
  });

  it("a document lock under the namespace's global lock watches the root", async () => {
    const namespace = 'watch-root';
    const { during } = await whileBlocked(
      true,
      { namespace, granularity: 'global', owner: 'migration' },
      { namespace, granularity: 'document', ids: ['a'], owner: 'editor' },
    );
    expect(during.writes).toBe(0);
    expect(during.reads).toBeGreaterThan(0);
  });
});
