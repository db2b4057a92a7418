/**
 * The in-memory store's lagging copy, which the store contract allows but a healthy real node does
 * not show on demand (so it is not in contract.ts): a plain read may be answered by a copy cut off
 * from the cluster. The copy must only lag, never invent: every answer it gives is the state the
 * primary had after some earlier prefix of its writes, the same prefix for every document of the
 * answer, and that prefix never moves back. The primary reads and the writes never see it.
 */
import { describe, expect, it } from 'vitest';
import { MemoryLockStore } from '../../packages/engine/src/memory-store.js';
import type { LockDocument } from '../../packages/engine/src/model.js';
import type { StoredLock, WriteOp } from '../../packages/engine/src/store.js';
import { seededRandom } from '../../tools/shared/seeded-random.js';
import { Scheduler, scheduledStore } from '../support/scheduler.js';

const NAMESPACE = 'copy';

function treeBody(key: string, expiresAt: number, lease: string): LockDocument {
  return {
    namespace: NAMESPACE,
    granularity: 'tree',
    key,
    lockId: `${NAMESPACE}|t|${key}`,
    holders: [{ lease, proof: 'p', owner: 'o', mode: 'X', expiresAt, grantedAt: 0, fence: null, request: null }],
    minExpiresAt: expiresAt,
    maxExpiresAt: expiresAt,
    updatedAt: 0,
  };
}

const docId = (key: string): string => `${NAMESPACE}|t|${key}`;

/** What a reader can tell states apart by: the version and who holds it. */
const seen = (lock: StoredLock | null | undefined): string | null =>
  lock ? `${lock.seqNo}/${lock.primaryTerm} ${lock.body.holders.map((holder) => `${holder.lease}@${holder.expiresAt}`).join(',')}` : null;

describe('the in-memory store with a lagging copy', () => {
  it('answers from the copy the state it had when cut off, then each missed write in order, and the primary throughout', async () => {
    const store = new MemoryLockStore();
    const id = docId('/a');
    const created = (await store.write([{ kind: 'create', docId: id, body: treeBody('/a', 10, 'first') }]))[0]!;
    expect(created.ok).toBe(true);
    store.lagBehind();
    const replaced = await store.write([
      { kind: 'replace', docId: id, body: treeBody('/a', 20, 'second'), ifSeqNo: (created as { seqNo: number }).seqNo, ifPrimaryTerm: 1 },
    ]);
    const second = replaced[0] as { ok: true; seqNo: number; primaryTerm: number };
    await store.write([{ kind: 'delete', docId: id, ifSeqNo: second.seqNo, ifPrimaryTerm: second.primaryTerm }]);
    expect(store.copyLag).toBe(2);

    expect((await store.readFromCopy([id])).get(id)?.body.holders[0]?.lease).toBe('first');
    expect((await store.findLiveBelowOnCopy({ namespace: NAMESPACE, path: '/a', selfDocId: id, liveAfter: 0 })).self?.body.holders[0]?.lease).toBe('first');
    for (const primary of [await store.read([id]), await store.readPrimary([id]), (await store.writeThenRead([], [id])).read])
      expect(primary.get(id)).toBeNull();
    expect((await store.findLiveBelow({ namespace: NAMESPACE, path: '/a', selfDocId: id, liveAfter: 0 })).self).toBeNull();
    // A write never goes by the copy: one conditional on the version the copy shows is refused.
    expect(await store.write([{ kind: 'delete', docId: id, ifSeqNo: (created as { seqNo: number }).seqNo, ifPrimaryTerm: 1 }])).toEqual([
      { ok: false, docId: id, reason: 'conflict' },
    ]);

    store.catchUp(1);
    expect(store.copyLag).toBe(1);
    expect((await store.readFromCopy([id])).get(id)?.body.holders[0]?.lease).toBe('second');
    store.catchUp();
    expect(store.copyLag).toBe(0);
    expect((await store.readFromCopy([id])).get(id)).toBeNull();
  });

  it('forgets the copy with the index: a dropped or re-created index has nothing old to show', async () => {
    const store = new MemoryLockStore();
    const id = docId('/b');
    await store.write([{ kind: 'create', docId: id, body: treeBody('/b', 10, 'old') }]);
    store.lagBehind();
    store.recreate();
    expect(store.copyLag).toBe(0);
    expect((await store.readFromCopy([id])).get(id)).toBeNull();
    store.lagBehind();
    store.drop();
    await expect(store.readFromCopy([id])).rejects.toThrow(/does not exist/);
  });

  it('trails the primary by a set number of writes when asked to, showing the state just before the latest ones', async () => {
    const store = new MemoryLockStore();
    const id = docId('/e');
    store.lagBehind(2);
    let version: { seqNo: number; primaryTerm: number } | undefined;
    for (const lease of ['l0', 'l1', 'l2', 'l3']) {
      const body = treeBody('/e', 10, lease);
      const op: WriteOp = version
        ? { kind: 'replace', docId: id, body, ifSeqNo: version.seqNo, ifPrimaryTerm: version.primaryTerm }
        : { kind: 'create', docId: id, body };
      version = (await store.write([op]))[0] as { seqNo: number; primaryTerm: number };
    }
    expect(store.copyLag).toBe(2);
    expect((await store.readFromCopy([id])).get(id)?.body.holders[0]?.lease).toBe('l1');
    store.lagBehind();
    await store.write([{ kind: 'delete', docId: id, ifSeqNo: version!.seqNo, ifPrimaryTerm: version!.primaryTerm }]);
    expect(store.copyLag).toBe(3);
    expect((await store.readFromCopy([id])).get(id)?.body.holders[0]?.lease).toBe('l1');
    store.lagBehind(0);
    expect(store.copyLag).toBe(0);
    expect((await store.readFromCopy([id])).get(id)).toBeNull();
  });

  it('trails document by document: each document shows a state it had a few of its own writes ago', async () => {
    const store = new MemoryLockStore();
    const [x, y] = [docId('/x'), docId('/y')];
    store.lagBehind(1);
    await store.write([{ kind: 'create', docId: x, body: treeBody('/x', 10, 'x1') }]);
    let version = (await store.write([{ kind: 'create', docId: y, body: treeBody('/y', 10, 'y1') }]))[0] as { seqNo: number; primaryTerm: number };
    for (const lease of ['y2', 'y3']) {
      const op: WriteOp = { kind: 'replace', docId: y, body: treeBody('/y', 10, lease), ifSeqNo: version.seqNo, ifPrimaryTerm: version.primaryTerm };
      version = (await store.write([op]))[0] as { seqNo: number; primaryTerm: number };
    }
    // /x's one write is still missed, while /y's are applied up to the one before its last, out of the primary's order.
    const fromCopy = await store.readFromCopy([x, y]);
    expect(fromCopy.get(x)).toBeNull();
    expect(fromCopy.get(y)?.body.holders[0]?.lease).toBe('y2');
    expect(store.copyLag).toBe(2);
  });

  it('shows, over random writes, cut-offs, trailing and catch-ups, only states the primary had, each document never going back', async () => {
    for (let seed = 1; seed <= 25; seed++) {
      const random = seededRandom(seed);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
      const store = new MemoryLockStore();
      const keys = ['/p', '/p/q', '/p/q/r', '/p/s', '/t'];
      const ids = keys.map(docId);
      // history[n]: every document as the primary had it after its first n writes.
      const history: Array<Map<string, StoredLock | null>> = [new Map(ids.map((id) => [id, null]))];
      // The point of the history a search below answered from last (one point for all documents, never moving back).
      let searchedAt = 0;
      // Per document, the point of the history its state in the copy was last found at.
      const shownAt = new Map(ids.map((id) => [id, 0]));
      // While the copy has only been cut off (never trailed) since it last followed the primary, it shows one point for all documents.
      let trailed = false;
      let expiry = 0;
      /** The copy's state of a document must be one it had at or after where it was last found: returns that point. */
      const pointOf = (id: string, state: string | null, where: string): number => {
        const at = history.findIndex((entry, index) => index >= shownAt.get(id)! && seen(entry.get(id)) === state);
        expect(at, `${where}: ${id} shows ${state}, which it never had since point ${shownAt.get(id)}`).toBeGreaterThanOrEqual(0);
        shownAt.set(id, at);
        return at;
      };
      for (let step = 0; step < 300; step++) {
        const roll = random();
        if (roll < 0.5) {
          const key = pick(keys);
          const id = docId(key);
          const current = (await store.readPrimary([id])).get(id) ?? null;
          const body = treeBody(key, ++expiry, `l${step}`);
          const op: WriteOp = !current
            ? { kind: 'create', docId: id, body }
            : random() < 0.3
              ? { kind: 'delete', docId: id, ifSeqNo: current.seqNo, ifPrimaryTerm: current.primaryTerm }
              : { kind: 'replace', docId: id, body, ifSeqNo: current.seqNo, ifPrimaryTerm: current.primaryTerm };
          const [outcome] = random() < 0.5 ? await store.write([op]) : (await store.writeThenRead([op], ids)).outcomes;
          expect(outcome?.ok).toBe(true);
          history.push(new Map(ids.map((other) => [other, store.snapshot().find((lock) => lock.docId === other) ?? null])));
        } else if (roll < 0.56) {
          const trailing = random() < 0.5 ? undefined : Math.floor(random() * 4);
          trailed ||= trailing !== undefined;
          store.lagBehind(trailing);
        } else if (roll < 0.62) {
          store.catchUp(random() < 0.5 ? 1 + Math.floor(random() * 4) : undefined);
          // Caught up in full, the copy follows the primary again.
          if (store.copyLag === 0) trailed = false;
        } else if (roll < 0.64) {
          store.promotePrimary();
        } else {
          const latest = history.length - 1;
          const where = `seed ${seed} step ${step}`;
          const fromCopy = await store.readFromCopy(ids);
          const points = ids.map((id) => pointOf(id, seen(fromCopy.get(id)), where));
          if (!trailed) for (const id of ids) expect(seen(fromCopy.get(id)), `${where} ${id}`).toBe(seen(history[latest - store.copyLag]!.get(id)));
          expect(Math.max(...points)).toBeLessThanOrEqual(latest);
          const path = pick(keys);
          const liveAfter = expiry - 20;
          const search = await store.findLiveBelowOnCopy({ namespace: NAMESPACE, path, selfDocId: docId(path), liveAfter });
          const answer = [seen(search.self), ...search.below.map(seen).sort()].join(' | ');
          const asAt = (point: number): string => {
            const state = history[point]!;
            const below = [...state.values()]
              .filter((lock): lock is StoredLock => lock !== null)
              .filter((lock) => lock.body.key.startsWith(`${path}/`) && (lock.body.maxExpiresAt ?? 0) > liveAfter);
            return [seen(state.get(docId(path))), ...below.map(seen).sort()].join(' | ');
          };
          const point = history.findIndex((_, index) => index >= searchedAt && asAt(index) === answer);
          expect(point, `${where}: the search below ${path} answered ${answer}, no point of the history since ${searchedAt}`).toBeGreaterThanOrEqual(0);
          searchedAt = point;
          const primary = await store.read(ids);
          for (const id of ids) expect(seen(primary.get(id))).toBe(seen(history[latest]!.get(id)));
        }
      }
    }
  });

  it('through the scheduled store, answers only plain reads and searches from the copy, and only while it lags', async () => {
    const memory = new MemoryLockStore();
    const scheduler = new Scheduler(7);
    const staleSeen: string[] = [];
    const store = scheduledStore(memory, scheduler, {
      lostAnswers: 0,
      unavailable: 0,
      staleReads: 1,
      onStaleAnswer: (answer) => staleSeen.push(`${answer.kind}: ${seen(answer.seen.get(id))} / ${seen(answer.primary.get(id))}`),
    });
    const id = docId('/c');
    await scheduler.run(store.write([{ kind: 'create', docId: id, body: treeBody('/c', 10, 'old') }]));
    const before = await scheduler.run(store.read([id]));
    expect(staleSeen).toEqual([]);
    memory.lagBehind();
    const old = before.get(id)!;
    await scheduler.run(store.write([{ kind: 'replace', docId: id, body: treeBody('/c', 20, 'new'), ifSeqNo: old.seqNo, ifPrimaryTerm: old.primaryTerm }]));
    const lease = (read: Map<string, StoredLock | null>): string | undefined => read.get(id)?.body.holders[0]?.lease;
    expect(lease(await scheduler.run(store.read([id])))).toBe('old');
    expect(staleSeen).toEqual([expect.stringMatching(/^read: .* old@10 \/ .* new@20$/)]);
    expect((await scheduler.run(store.findLiveBelow({ namespace: NAMESPACE, path: '/c', selfDocId: id, liveAfter: 0 }))).self?.body.holders[0]?.lease).toBe(
      'old',
    );
    expect(lease(await scheduler.run(store.readPrimary([id])))).toBe('new');
    expect(lease((await scheduler.run(store.writeThenRead([], [id]))).read)).toBe('new');
    memory.catchUp();
    expect(lease(await scheduler.run(store.read([id])))).toBe('new');
    expect(staleSeen).toHaveLength(2);
    expect(staleSeen[1]).toMatch(/^search: /);
  });

  it('draws no random number for stale reads at rate 0: schedules without them stay as they were', async () => {
    const draws = async (staleReads: number | undefined): Promise<number> => {
      const memory = new MemoryLockStore();
      const scheduler = new Scheduler(11);
      const store = scheduledStore(memory, scheduler, { lostAnswers: 0, unavailable: 0, ...(staleReads === undefined ? {} : { staleReads }) });
      memory.lagBehind();
      await scheduler.run(store.write([{ kind: 'create', docId: docId('/d'), body: treeBody('/d', 10, 'x') }]));
      await scheduler.run(store.read([docId('/d')]));
      return scheduler.random();
    };
    expect(await draws(0)).toBe(await draws(undefined));
    expect(await draws(0.5)).not.toBe(await draws(undefined));
  });
});
