import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/elasticsearch-store.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError } from '../../packages/engine/src/errors.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import type { RequestedMode } from '../../packages/engine/src/model.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

let client: SearchClient;
let engine: LockService;
let store: ElasticsearchLockStore;

beforeAll(async () => {
  client = testClient();
  const index = await freshLockIndex(client, 'shared');
  engine = engineOn(client, index);
  store = new ElasticsearchLockStore(client, index);
});
afterAll(async () => closeTestClient(client));

const global = (namespace: string, mode: RequestedMode, owner: string, ttlMs = 10_000) => ({ namespace, granularity: 'global', mode, owner, ttlMs });

describe('shared locks', () => {
  it('let readers share and keep writers out until every reader is gone', async () => {
    const readers = await Promise.all(['r1', 'r2', 'r3'].map((owner) => engine.acquire(global('catalog', 'shared', owner))));
    await expect(engine.acquire(global('catalog', 'exclusive', 'writer'))).rejects.toBeInstanceOf(LockHeldError);
    for (const reader of readers.slice(0, 2)) await engine.release({ leaseToken: reader.leaseToken });
    await expect(engine.acquire(global('catalog', 'exclusive', 'writer'))).rejects.toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: readers[2]!.leaseToken });
    const writer = await engine.acquire(global('catalog', 'exclusive', 'writer'));
    await expect(engine.acquire(global('catalog', 'shared', 'late-reader'))).rejects.toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: writer.leaseToken });
  });

  it("expire one reader at a time: a dead reader's share lapses while a live one stays", async () => {
    const dead = await engine.acquire(global('reports', 'shared', 'dead-reader', 1_000));
    const alive = await engine.acquire(global('reports', 'shared', 'live-reader', 20_000));
    await sleep(1_100);
    const [state] = await engine.inspect({ namespace: 'reports', granularity: 'global' });
    expect(state?.holders.map((holder) => [holder.owner, holder.expired])).toEqual([
      ['dead-reader', true],
      ['live-reader', false],
    ]);
    const refusal = (await engine.acquire(global('reports', 'exclusive', 'writer')).catch((error: unknown) => error)) as LockHeldError;
    expect(refusal.conflicts[0]?.holders.map((holder) => holder.owner)).toEqual(['live-reader']);
    await engine.release({ leaseToken: alive.leaseToken });
    const writer = await engine.acquire(global('reports', 'exclusive', 'writer'));
    expect((await engine.release({ leaseToken: dead.leaseToken })).outcome).toBe('not_held');
    await engine.release({ leaseToken: writer.leaseToken });
  });

  it('give every shared holder its own fencing token', async () => {
    const a = await engine.acquire(global('fences', 'shared', 'a'));
    const b = await engine.acquire(global('fences', 'shared', 'b'));
    expect(BigInt(b.fencingToken)).toBeGreaterThan(BigInt(a.fencingToken));
    const renewedA = await engine.renew({ leaseToken: a.leaseToken });
    expect(renewedA.fencingToken).toBe(a.fencingToken);
    await engine.release({ leaseToken: a.leaseToken });
    await engine.release({ leaseToken: b.leaseToken });
  });
});

describe('document sets', () => {
  const ids = (...values: string[]) => ({ namespace: 'invoices', granularity: 'document', ids: values, owner: 'batch' });

  it('are all or nothing: one conflicting id leaves nothing held', async () => {
    const blocker = await engine.acquire({ ...ids('i-3'), owner: 'blocker' });
    const refusal = (await engine.acquire(ids('i-1', 'i-2', 'i-3', 'i-4')).catch((error: unknown) => error)) as LockHeldError;
    expect(refusal).toBeInstanceOf(LockHeldError);
    expect(refusal.conflicts.map((conflict) => conflict.key)).toEqual(['i-3']);
    const states = await engine.inspect({ namespace: 'invoices', granularity: 'document', ids: ['i-1', 'i-2', 'i-3', 'i-4'] });
    expect(states.map((state) => state.key)).toEqual(['i-3']);
    await engine.release({ leaseToken: blocker.leaseToken });
    const grant = await engine.acquire(ids('i-1', 'i-2', 'i-3', 'i-4'));
    expect(grant.keys.map((key) => key.key).sort()).toEqual(['i-1', 'i-2', 'i-3', 'i-4']);
    expect((await engine.release({ leaseToken: grant.leaseToken })).releasedKeys).toHaveLength(4);
  });

  it('never deadlock: overlapping sets requested in opposite orders end with each set granted whole or not at all', async () => {
    const forward = Array.from({ length: 20 }, (_, index) => `d-${index}`);
    for (let round = 0; round < 5; round++) {
      // Waits long enough for one of them to get through on a loaded machine (two sets that back off
      // from each other's partial writes may both run out of a short wait), short enough to end.
      const results = await Promise.allSettled([
        engine.acquire({ ...ids(...forward), owner: 'forward', waitMs: 3_000 }),
        engine.acquire({ ...ids(...[...forward].reverse()), owner: 'backward', waitMs: 3_000 }),
      ]);
      const grants = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      expect(grants.length).toBeGreaterThanOrEqual(1);
      // At most one holds at a time; release it so that the other (waiting) can finish.
      for (const grant of grants) await engine.release({ leaseToken: grant.leaseToken });
    }
    expect(await engine.inspect({ namespace: 'invoices', granularity: 'document', ids: forward })).toEqual([]);
  });

  it('renew and release act on the whole set', async () => {
    const grant = await engine.acquire({ ...ids('s-1', 's-2', 's-3'), ttlMs: 2_000 });
    const renewal = await engine.renew({ leaseToken: grant.leaseToken, ttlMs: 30_000 });
    const states = await engine.inspect({ namespace: 'invoices', granularity: 'document', ids: ['s-1', 's-2', 's-3'] });
    expect(states.flatMap((state) => state.holders.map((holder) => holder.expiresAt))).toEqual([renewal.expiresAt, renewal.expiresAt, renewal.expiresAt]);
    expect((await engine.release({ leaseToken: renewal.leaseToken })).outcome).toBe('released');
  });
});

describe('tree locks', () => {
  type Relation = 'same node' | 'ancestor' | 'descendant' | 'sibling' | 'cousin';
  const second: Record<Relation, string> = {
    'same node': '/home/alice/docs',
    ancestor: '/home/alice',
    descendant: '/home/alice/docs/report.txt',
    sibling: '/home/alice/music',
    cousin: '/home/bob/docs',
  };
  // Whether a second lock may be granted while the first (on /home/alice/docs) is held.
  const matrix: Array<[RequestedMode, RequestedMode, Relation, boolean]> = [
    ['exclusive', 'exclusive', 'same node', false],
    ['exclusive', 'shared', 'same node', false],
    ['shared', 'exclusive', 'same node', false],
    ['shared', 'shared', 'same node', true],
    ['exclusive', 'exclusive', 'ancestor', false],
    ['exclusive', 'shared', 'ancestor', false],
    ['shared', 'exclusive', 'ancestor', false],
    ['shared', 'shared', 'ancestor', true],
    ['exclusive', 'exclusive', 'descendant', false],
    ['exclusive', 'shared', 'descendant', false],
    ['shared', 'exclusive', 'descendant', false],
    ['shared', 'shared', 'descendant', true],
    ['exclusive', 'exclusive', 'sibling', true],
    ['exclusive', 'shared', 'sibling', true],
    ['shared', 'exclusive', 'sibling', true],
    ['shared', 'shared', 'sibling', true],
    ['exclusive', 'exclusive', 'cousin', true],
    ['shared', 'exclusive', 'cousin', true],
  ];

  it.each(matrix)('%s on /home/alice/docs, then %s on the %s: granted = %s', async (firstMode, secondMode, relation, granted) => {
    const namespace = `fs-${firstMode[0]}${secondMode[0]}-${relation.replace(' ', '')}`;
    const first = await engine.acquire({ namespace, granularity: 'tree', path: '/home/alice/docs', mode: firstMode, owner: 'first' });
    const attempt = await engine
      .acquire({ namespace, granularity: 'tree', path: second[relation], mode: secondMode, owner: 'second' })
      .catch((error: unknown) => error);
    if (granted) {
      expect(attempt).not.toBeInstanceOf(Error);
      await engine.release({ leaseToken: (attempt as { leaseToken: string }).leaseToken });
    } else {
      expect(attempt).toBeInstanceOf(LockHeldError);
    }
    await engine.release({ leaseToken: first.leaseToken });
    // Whatever happened, nothing is left behind (inspect reads in real time, unlike list).
    for (const path of ['/home/alice/docs', second[relation]]) {
      expect(await engine.inspect({ namespace, granularity: 'tree', path })).toEqual([]);
    }
  });

  it('write only the target path: each ancestor is marked once as having locks below, and holds nobody', async () => {
    const path = '/clinton/projects/elasticsearch/README.txt';
    const grant = await engine.acquire({ namespace: 'fs-shape', granularity: 'tree', path, owner: 'editor' });
    expect(grant.keys.map((key) => [key.key, key.mode])).toEqual([[path, 'X']]);
    const ancestors = ['/clinton', '/clinton/projects', '/clinton/projects/elasticsearch'];
    const stored = await store.readPrimary(ancestors.map((ancestor) => lockDocId('fs-shape', 'tree', ancestor)));
    expect([...stored.values()].map((lock) => [lock?.body.key, lock?.body.lockedBelow, lock?.body.holders.length])).toEqual(
      ancestors.map((ancestor) => [ancestor, true, 0]),
    );
    // The marks stay when the last lock below goes: a later lock on /clinton must know to look below.
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
    const after = await store.readPrimary([lockDocId('fs-shape', 'tree', '/clinton'), lockDocId('fs-shape', 'tree', path)]);
    expect([...after.values()].map((lock) => lock?.body.lockedBelow ?? null)).toEqual([true, null]);
  });

  it('grant 40 concurrent writers of different files in one hot directory at once, without waiting, and without writing the directory', async () => {
    const namespace = 'fs-hot';
    const warm = await engine.acquire({ namespace, granularity: 'tree', path: '/hot/dir/warm-up', owner: 'first' });
    await engine.release({ leaseToken: warm.leaseToken });
    const [before] = [...(await store.readPrimary([lockDocId(namespace, 'tree', '/hot')])).values()];
    const writers = await Promise.all(
      Array.from({ length: 40 }, (_, index) => engine.acquire({ namespace, granularity: 'tree', path: `/hot/dir/file${index}`, owner: `w${index}` })),
    );
    const [after] = [...(await store.readPrimary([lockDocId(namespace, 'tree', '/hot')])).values()];
    expect(after?.seqNo).toBe(before?.seqNo);
    expect(await engine.inspect({ namespace, granularity: 'tree', path: '/hot/dir/file7' })).toEqual([
      expect.objectContaining({ key: '/hot/dir/file7', holders: [expect.objectContaining({ owner: 'w7', mode: 'X' })] }),
    ]);
    await Promise.all(writers.map((writer) => engine.release({ leaseToken: writer.leaseToken })));
    expect(await engine.inspect({ namespace, granularity: 'tree', path: '/hot/dir/file0' })).toEqual([]);
  });

  it('let writers in different subtrees run together under concurrency, and keep a subtree rename out', async () => {
    const namespace = 'fs-parallel';
    const writers = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        engine.acquire({ namespace, granularity: 'tree', path: `/root/dir${index % 4}/file${index}`, owner: `w${index}`, waitMs: 2_000 }),
      ),
    );
    await expect(engine.acquire({ namespace, granularity: 'tree', path: '/root/dir1', owner: 'renamer' })).rejects.toBeInstanceOf(LockHeldError);
    for (const writer of writers) await engine.release({ leaseToken: writer.leaseToken });
    const rename = await engine.acquire({ namespace, granularity: 'tree', path: '/root/dir1', owner: 'renamer' });
    await expect(engine.acquire({ namespace, granularity: 'tree', path: '/root/dir1/file1', owner: 'late' })).rejects.toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: rename.leaseToken });
  });
});
