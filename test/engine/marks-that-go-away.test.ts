/**
 * `lockedBelow` marks that go away (docs/tree-locks.md, "Marks"). A directory (or a namespace's root)
 * is marked by the first lock below it, and a lock on a marked document searches below. The exclusive
 * holder that leaves its document as it found it (nothing written there since its insertion) clears
 * the mark on release, so the next lock on it skips the search; a lock below that passed that holder
 * because it had run out writes the document first, so such a late release never clears a mark a live
 * lock below relies on. On the real node; the interposed store counts the searches and puts a file
 * lock exactly at the release (a chosen interleaving a healthy node will not produce on demand).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError } from '../../packages/engine/src/errors.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import { LockService } from '../../packages/engine/src/service.js';
import { interpose } from '../../tools/shared/interposed-store.js';
import { closeTestClient, freshLockIndex, sleep, testClient } from '../support/engine.js';
import { tree } from '../support/targets.js';

const SKEW = 50;
let client: SearchClient;
let store: ElasticsearchLockStore;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  store = new ElasticsearchLockStore(client, await freshLockIndex(client, 'marks'));
  engine = new LockService(store, { maxClockSkewMs: SKEW });
});
afterAll(async () => closeTestClient(client));

const marked = async (namespace: string, path: string): Promise<boolean> =>
  (await store.readPrimary([lockDocId(namespace, 'tree', path)])).get(lockDocId(namespace, 'tree', path))?.body.lockedBelow === true;

/** An engine that counts its searches below. */
function counting(): { engine: LockService; searches: () => number } {
  const watched = interpose(store, {});
  return { engine: new LockService(watched, { maxClockSkewMs: SKEW }), searches: () => watched.calls.findLiveBelow };
}

/** A file lock below `/p` taken and released: `/p` is marked. */
async function markBelow(namespace: string): Promise<void> {
  const file = await engine.acquire(tree(namespace, '/p/f', 'writer'));
  await engine.release({ leaseToken: file.leaseToken });
  expect(await marked(namespace, '/p')).toBe(true);
}

describe('marks that go away', () => {
  it('an exclusive directory lock released as it was granted clears the mark: the next lock on the directory skips the search below', async () => {
    const namespace = 'marks-cleared';
    await markBelow(namespace);
    const first = counting();
    const directory = await first.engine.acquire(tree(namespace, '/p', 'renamer'));
    expect(first.searches()).toBe(1);
    await engine.release({ leaseToken: directory.leaseToken });
    expect(await marked(namespace, '/p')).toBe(false);
    const next = counting();
    await next.engine.release({ leaseToken: (await next.engine.acquire(tree(namespace, '/p', 'renamer'))).leaseToken });
    expect(next.searches()).toBe(0);
  });

  it('a file lock arriving at the release: before it, the directory holder turns it away; after it, the file lock marks the directory again and the next directory lock waits for it', async () => {
    const namespace = 'marks-race';
    await markBelow(namespace);
    const directory = await engine.acquire(tree(namespace, '/p', 'renamer'));
    let arriving: unknown;
    // Stand-in for a file lock that arrives exactly as the release is sent: right before its write.
    const releasing = new LockService(
      interpose(store, {
        write: async (ops, next) => {
          arriving ??= await engine.acquire(tree(namespace, '/p/g', 'writer')).catch((error: unknown) => error);
          return next(ops);
        },
      }),
      { maxClockSkewMs: SKEW },
    );
    await releasing.release({ leaseToken: directory.leaseToken });
    expect(arriving).toBeInstanceOf(LockHeldError);
    expect(await marked(namespace, '/p')).toBe(false);
    const file = await engine.acquire(tree(namespace, '/p/g', 'writer'));
    expect(await marked(namespace, '/p')).toBe(true);
    await expect(engine.acquire(tree(namespace, '/p', 'renamer'))).rejects.toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: file.leaseToken });
  });

  it('a directory holder whose lease ran out releases late: the file lock that passed it wrote the directory, so the mark stays and the next directory lock waits for that file lock', async () => {
    const namespace = 'marks-late';
    await markBelow(namespace);
    const directory = await engine.acquire(tree(namespace, '/p', 'renamer', { ttlMs: 1_000 }));
    await sleep(1_000 + SKEW + 50);
    const file = await engine.acquire(tree(namespace, '/p/g', 'writer'));
    const late = await engine.release({ leaseToken: directory.leaseToken });
    expect(late.outcome).not.toBe('released');
    expect(await marked(namespace, '/p')).toBe(true);
    await expect(engine.acquire(tree(namespace, '/p', 'renamer'))).rejects.toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: file.leaseToken });
  });

  it('a renewed directory lock, or a shared one, keeps the mark when released', async () => {
    const namespace = 'marks-kept';
    await markBelow(namespace);
    const renewed = await engine.acquire(tree(namespace, '/p', 'renamer'));
    const renewal = await engine.renew({ leaseToken: renewed.leaseToken });
    await engine.release({ leaseToken: renewal.leaseToken });
    expect(await marked(namespace, '/p')).toBe(true);
    const reader = await engine.acquire(tree(namespace, '/p', 'reader', { mode: 'shared' }));
    await engine.release({ leaseToken: reader.leaseToken });
    expect(await marked(namespace, '/p')).toBe(true);
  });

  it("a namespace's global lock clears the root's mark the same way: the next global lock skips the search of the namespace", async () => {
    const namespace = 'marks-root';
    const file = await engine.acquire(tree(namespace, '/p/f', 'writer'));
    await engine.release({ leaseToken: file.leaseToken });
    const global = { namespace, granularity: 'global' as const, owner: 'migration' };
    const first = counting();
    await engine.release({ leaseToken: (await first.engine.acquire(global)).leaseToken });
    expect(first.searches()).toBe(1);
    const next = counting();
    await next.engine.release({ leaseToken: (await next.engine.acquire(global)).leaseToken });
    expect(next.searches()).toBe(0);
  });
});
