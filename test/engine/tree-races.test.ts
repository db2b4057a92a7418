/**
 * The races of the tree-lock protocol (docs/tree-locks.md), on the real node, for many rounds: a
 * lock on a directory against locks below it that never write the directory, holders that die, a
 * sweeper running through all of it. Each hold is recorded from the moment its grant arrived until
 * its release was sent, a window inside the real one: two incompatible windows must never overlap,
 * and of two conflicting holds the later one must carry the larger fencing token.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LeaseLostError, LockHeldError } from '../../packages/engine/src/errors.js';
import { compareFencingTokens } from '../../packages/engine/src/fencing.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import type { RequestedMode } from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import { interpose } from '../../tools/shared/interposed-store.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

const ROUNDS = Number(process.env.TREE_RACE_ROUNDS ?? 12);
const SKEW = 50;

let client: SearchClient;
let index: string;
let engine: LockService;
let store: ElasticsearchLockStore;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'tree-races');
  engine = engineOn(client, index, { maxClockSkewMs: SKEW });
  store = new ElasticsearchLockStore(client, index);
});
afterAll(async () => closeTestClient(client));

interface Hold {
  namespace: string;
  path: string;
  mode: RequestedMode;
  token: string;
  from: number;
  to: number;
}

/**
 * Whether two tree holds may overlap, by the table in docs/model.md: on one path, only readers; on a path and one below it, only readers too.
 * Holds in different namespaces never meet (and their tokens are not ordered: on a lock index with several shards, their namespaces' sequences differ).
 */
function compatible(a: Hold, b: Hold): boolean {
  const related = a.namespace === b.namespace && (a.path === b.path || b.path.startsWith(`${a.path}/`) || a.path.startsWith(`${b.path}/`));
  return !related || (a.mode === 'shared' && b.mode === 'shared');
}

function violations(holds: Hold[]): string[] {
  const found: string[] = [];
  for (const [position, a] of holds.entries()) {
    for (const b of holds.slice(position + 1)) {
      if (compatible(a, b)) continue;
      if (Math.max(a.from, b.from) < Math.min(a.to, b.to)) found.push(`${a.mode} ${a.path} and ${b.mode} ${b.path} held together`);
      const [first, second] = a.from <= b.from ? [a, b] : [b, a];
      if (compareFencingTokens(second.token, first.token) <= 0)
        found.push(`${second.path} (${second.token}) was granted after ${first.path} (${first.token}) with a smaller token`);
    }
  }
  return found;
}

/** Takes the lock, holds it for `holdMs`, releases it; records the hold. LockHeldError (waited out) is a refusal, not a failure. */
async function hold(namespace: string, path: string, mode: RequestedMode, holdMs: number, holds: Hold[], waitMs = 3_000): Promise<boolean> {
  try {
    const grant = await engine.acquire({ namespace, granularity: 'tree', path, mode, owner: `${mode}:${path}`, waitMs, ttlMs: 10_000 });
    const from = performance.now();
    await sleep(holdMs);
    const to = performance.now();
    holds.push({ namespace, path, mode, token: grant.fencingToken, from, to });
    await engine.release({ leaseToken: grant.leaseToken });
    return true;
  } catch (error) {
    if (error instanceof LockHeldError) return false;
    throw error;
  }
}

describe('tree locks under contention', () => {
  it(`a lock on /a racing writers of many paths under /a is never granted while one of them holds (${ROUNDS} rounds, both modes)`, async () => {
    const holds: Hold[] = [];
    let directoryGrants = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const namespace = `race-dir-${round}`;
      const mode: RequestedMode = round % 2 === 0 ? 'exclusive' : 'shared';
      const writers = Array.from({ length: 12 }, (_, writer) => hold(namespace, `/a/d${writer % 3}/f${writer}`, 'exclusive', 5 + (writer % 4) * 5, holds));
      const directory = sleep(round % 5).then(() => hold(namespace, '/a', mode, 15, holds));
      const results = await Promise.all([...writers, directory]);
      if (results.at(-1)) directoryGrants++;
    }
    expect(violations(holds)).toEqual([]);
    expect(directoryGrants).toBeGreaterThan(ROUNDS / 2);
  }, 120_000);

  it(`a rename of /a/b racing edits below it waits for them, and edits next to it run alongside (${ROUNDS} rounds)`, async () => {
    const holds: Hold[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const namespace = `race-rename-${round}`;
      const inside = Array.from({ length: 6 }, (_, writer) =>
        hold(namespace, `/a/b/c${writer % 2}/f${writer}`, writer % 3 === 0 ? 'shared' : 'exclusive', 10, holds),
      );
      const beside = Array.from({ length: 6 }, (_, writer) => hold(namespace, `/a/x/f${writer}`, 'exclusive', 40, holds));
      const rename = sleep(round % 3).then(() => hold(namespace, '/a/b', 'exclusive', 20, holds));
      await Promise.all([...inside, ...beside, rename]);
    }
    expect(violations(holds)).toEqual([]);
    const renames = holds.filter((entry) => entry.path === '/a/b');
    const besides = holds.filter((entry) => entry.path.startsWith('/a/x/'));
    expect(renames.length).toBeGreaterThan(0);
    // Some edit next door overlapped some rename: /a/x never waits for /a/b.
    expect(renames.some((rename) => besides.some((edit) => Math.max(rename.from, edit.from) < Math.min(rename.to, edit.to)))).toBe(true);
  }, 120_000);

  it('a sweep racing directory and file locks keeps every "locked below" mark and breaks no lock', async () => {
    const holds: Hold[] = [];
    const namespace = 'race-sweep';
    // Dead holders (never released) give the sweeper work while the others run.
    for (const path of ['/s/dead1', '/s/t/dead2', '/s']) {
      await engine.acquire({ namespace, granularity: 'tree', path, owner: 'dead', ttlMs: 1_000, waitMs: 3_000 });
    }
    await sleep(1_000 + SKEW + 20);
    let sweeping = true;
    const sweeper = (async () => {
      let swept = 0;
      while (sweeping) {
        await client.indices.refresh({ index });
        swept += (await engine.sweep({ batchSize: 5 })).deletedLocks;
        await sleep(5);
      }
      return swept;
    })();
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all([
        ...Array.from({ length: 8 }, (_, writer) => hold(namespace, `/s/t/f${writer}`, 'exclusive', 5, holds)),
        hold(namespace, '/s/t', round % 2 === 0 ? 'exclusive' : 'shared', 10, holds),
        hold(namespace, '/s', 'shared', 5, holds),
      ]);
    }
    sweeping = false;
    expect(await sweeper).toBeGreaterThan(0);
    expect(violations(holds)).toEqual([]);
    const marks = await store.readPrimary(['/s', '/s/t'].map((path) => lockDocId(namespace, 'tree', path)));
    expect([...marks.values()].map((lock) => lock?.body.lockedBelow)).toEqual([true, true]);
  }, 120_000);
});

describe('tree locks whose holders fail', () => {
  it('a file lock under a held directory is rolled back, its own document gone, and the conflict names the directory', async () => {
    const namespace = 'verify-rollback';
    const directory = await engine.acquire({ namespace, granularity: 'tree', path: '/v', owner: 'renamer' });
    const error = (await engine
      .acquire({ namespace, granularity: 'tree', path: '/v/w/file', owner: 'editor' })
      .catch((caught: unknown) => caught)) as LockHeldError;
    expect(error).toBeInstanceOf(LockHeldError);
    expect(error.conflicts).toEqual([
      expect.objectContaining({ key: '/v', requestedMode: 'IX', holders: [expect.objectContaining({ owner: 'renamer', mode: 'X' })] }),
    ]);
    expect((await store.readPrimary([lockDocId(namespace, 'tree', '/v/w/file')])).get(lockDocId(namespace, 'tree', '/v/w/file'))).toBeNull();
    await engine.release({ leaseToken: directory.leaseToken });
    const later = await engine.acquire({ namespace, granularity: 'tree', path: '/v/w/file', owner: 'editor' });
    expect(compareFencingTokens(later.fencingToken, directory.fencingToken)).toBeGreaterThan(0);
  });

  it('a directory lock waits for a file below to be released, then is granted with a larger token', async () => {
    const namespace = 'drain';
    const file = await engine.acquire({ namespace, granularity: 'tree', path: '/d/e/file', owner: 'editor' });
    const started = performance.now();
    const pending = engine.acquire({ namespace, granularity: 'tree', path: '/d', owner: 'renamer', waitMs: 5_000 });
    await sleep(300);
    await engine.release({ leaseToken: file.leaseToken });
    const directory = await pending;
    expect(performance.now() - started).toBeGreaterThanOrEqual(300);
    expect(compareFencingTokens(directory.fencingToken, file.fencingToken)).toBeGreaterThan(0);
    await engine.release({ leaseToken: directory.leaseToken });
  });

  it('a directory lock without waitMs is refused at once when a file below is held', async () => {
    const namespace = 'no-wait';
    const file = await engine.acquire({ namespace, granularity: 'tree', path: '/n/o/file', owner: 'editor' });
    const error = (await engine.acquire({ namespace, granularity: 'tree', path: '/n', owner: 'renamer' }).catch((caught: unknown) => caught)) as LockHeldError;
    expect(error).toBeInstanceOf(LockHeldError);
    expect(error.conflicts).toEqual([expect.objectContaining({ key: '/n/o/file', requestedMode: 'X' })]);
    // The refused directory lock left nothing that blocks: another file lock below still gets in.
    await engine.acquire({ namespace, granularity: 'tree', path: '/n/p', owner: 'other' });
    await engine.release({ leaseToken: file.leaseToken });
  });

  it('a directory lock without waitMs does not hold the files below out while an established lock below keeps it waiting', async () => {
    const namespace = 'no-wait-established';
    const file = await engine.acquire({ namespace, granularity: 'tree', path: '/y/z/file', owner: 'editor' });
    await sleep(300); // older than the grace given to locks below that may still be backing off
    // Waiting would re-read the file's document from the primary until it goes: counted, not timed (the machine may be busy).
    const fileDoc = lockDocId(namespace, 'tree', '/y/z/file');
    let fileReads = 0;
    const counting = new LockService(
      interpose(store, {
        readPrimary: async (ids, next) => {
          if (ids.includes(fileDoc)) fileReads++;
          return next(ids);
        },
      }),
      { maxClockSkewMs: SKEW },
    );
    await expect(counting.acquire({ namespace, granularity: 'tree', path: '/y', owner: 'renamer' })).rejects.toBeInstanceOf(LockHeldError);
    expect(fileReads).toBe(0);
    await engine.release({ leaseToken: file.leaseToken });
  });

  it('a dead directory holder blocks the files below until its lease ends, then a file lock gets in with a larger token', async () => {
    const namespace = 'dead-dir';
    const dead = await engine.acquire({ namespace, granularity: 'tree', path: '/q', owner: 'crashed', ttlMs: 1_000 });
    await expect(engine.acquire({ namespace, granularity: 'tree', path: '/q/r', owner: 'early' })).rejects.toBeInstanceOf(LockHeldError);
    const later = await engine.acquire({ namespace, granularity: 'tree', path: '/q/r', owner: 'patient', waitMs: 3_000 });
    expect(Date.now()).toBeGreaterThanOrEqual(dead.expiresAt + SKEW);
    expect(compareFencingTokens(later.fencingToken, dead.fencingToken)).toBeGreaterThan(0);
  });

  it('a dead file holder keeps a directory lock out until its lease ends; the directory then gets a larger token', async () => {
    const namespace = 'dead-file';
    const dead = await engine.acquire({ namespace, granularity: 'tree', path: '/u/v/file', owner: 'crashed', ttlMs: 1_000 });
    const directory = await engine.acquire({ namespace, granularity: 'tree', path: '/u', owner: 'renamer', waitMs: 3_000 });
    expect(Date.now()).toBeGreaterThanOrEqual(dead.expiresAt + SKEW);
    expect(compareFencingTokens(directory.fencingToken, dead.fencingToken)).toBeGreaterThan(0);
  });

  it('a search below answered by a copy that has not seen our write is asked again, never trusted', async () => {
    // A single node always answers from the primary; the stand-in answers the first search as a copy
    // cut off from the cluster would (nothing below, and not our own write), then lets the real node answer.
    const namespace = 'lagging-copy';
    const file = await engine.acquire({ namespace, granularity: 'tree', path: '/g/h/file', owner: 'editor' });
    const lagging = interpose(store, { findLiveBelow: async (query, next, call) => (call === 1 ? { self: null, below: [] } : next(query)) });
    const directory = new LockService(lagging, { ...engine.settings });
    const error = await directory.acquire({ namespace, granularity: 'tree', path: '/g', owner: 'renamer' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockHeldError);
    expect(lagging.calls.findLiveBelow).toBeGreaterThan(1);
    await engine.release({ leaseToken: file.leaseToken });
  });

  it('a tree lease that ran out cannot be renewed, even with its document untouched, and stops blocking', async () => {
    const namespace = 'late-renew';
    const file = await engine.acquire({ namespace, granularity: 'tree', path: '/l/m', owner: 'paused', ttlMs: 1_000 });
    await sleep(1_050);
    // Nothing wrote /l/m meanwhile, but a lock on /l could have been granted without writing it.
    await expect(engine.renew({ leaseToken: file.leaseToken })).rejects.toBeInstanceOf(LeaseLostError);
    expect((await engine.inspect({ namespace, granularity: 'tree', path: '/l/m' })).flatMap((state) => state.holders)).toEqual([]);
  });
});
