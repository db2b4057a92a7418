/**
 * What the engine relies on from a LockStore, written once and run against every implementation:
 * the Elasticsearch store on the real node, and the in-memory store the interleaving tests use.
 */
import { describe, expect, it } from 'vitest';
import { StoreRejectedError } from '../../packages/engine/src/errors.js';
import type { LockDocument } from '../../packages/engine/src/model.js';
import type { LockStore, StoredLock, WriteOutcome } from '../../packages/engine/src/store.js';

export interface StoreUnderTest {
  store: LockStore;
  /** Makes every write visible to search (a refresh; nothing in memory). */
  refresh(): Promise<void>;
  /** Deletes the lock index, then creates a new incarnation. */
  drop(): Promise<void>;
  recreate(): Promise<void>;
}

let counter = 0;
function body(key: string, expiresAt: number, owner = 'o', namespace = 'contract'): LockDocument {
  return {
    namespace,
    granularity: 'document',
    key,
    lockId: `${namespace}|d|${key}`,
    holders: [{ lease: `l${++counter}`, proof: 'p', owner, mode: 'X', expiresAt, grantedAt: 0, fence: null, request: null }],
    minExpiresAt: expiresAt,
    maxExpiresAt: expiresAt,
    updatedAt: 0,
  };
}

const applied = (outcome: WriteOutcome | undefined): Extract<WriteOutcome, { ok: true }> => {
  expect(outcome).toMatchObject({ ok: true });
  return outcome as Extract<WriteOutcome, { ok: true }>;
};

export function storeContract(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`the ${name} store`, () => {
    const unique = (label: string): string => `${label}-${++counter}`;

    it('reads absent documents as null, and a created one at once (realtime) with its seq_no, term and incarnation', async () => {
      const { store } = await open();
      const id = unique('contract|d|a');
      expect((await store.read([id])).get(id)).toBeNull();
      const created = applied((await store.write([{ kind: 'create', docId: id, body: body(id, 1) }]))[0]);
      expect(created.index).toEqual(expect.any(String));
      for (const read of [await store.read([id]), await store.readPrimary([id])]) {
        expect(read.get(id)).toMatchObject({ docId: id, seqNo: created.seqNo, primaryTerm: created.primaryTerm, index: created.index, body: { key: id } });
      }
    });

    it('refuses a create of an existing document, and any conditional write on a changed or missing one', async () => {
      const { store } = await open();
      const id = unique('contract|d|b');
      const first = applied((await store.write([{ kind: 'create', docId: id, body: body(id, 1) }]))[0]);
      expect(await store.write([{ kind: 'create', docId: id, body: body(id, 2) }])).toEqual([{ ok: false, docId: id, reason: 'conflict' }]);
      const replaced = applied(
        (await store.write([{ kind: 'replace', docId: id, body: body(id, 3), ifSeqNo: first.seqNo, ifPrimaryTerm: first.primaryTerm }]))[0],
      );
      expect(replaced.seqNo).toBeGreaterThan(first.seqNo);
      const stale = { ifSeqNo: first.seqNo, ifPrimaryTerm: first.primaryTerm };
      expect(await store.write([{ kind: 'replace', docId: id, body: body(id, 4), ...stale }])).toEqual([{ ok: false, docId: id, reason: 'conflict' }]);
      expect(await store.write([{ kind: 'delete', docId: id, ...stale }])).toEqual([{ ok: false, docId: id, reason: 'conflict' }]);
      expect((await store.read([id])).get(id)?.body.holders[0]?.expiresAt).toBe(3);
      applied((await store.write([{ kind: 'delete', docId: id, ifSeqNo: replaced.seqNo, ifPrimaryTerm: replaced.primaryTerm }]))[0]);
      expect((await store.read([id])).get(id)).toBeNull();
      expect(await store.write([{ kind: 'replace', docId: id, body: body(id, 5), ...stale }])).toEqual([{ ok: false, docId: id, reason: 'conflict' }]);
    });

    it('applies a bulk in order with one outcome per item, and one sequence across documents', async () => {
      const { store } = await open();
      const [a, b, c] = [unique('contract|d|c'), unique('contract|d|c'), unique('contract|d|c')];
      const taken = applied((await store.write([{ kind: 'create', docId: b, body: body(b, 1) }]))[0]);
      const outcomes = await store.write([
        { kind: 'create', docId: a, body: body(a, 1) },
        { kind: 'create', docId: b, body: body(b, 1) },
        { kind: 'create', docId: c, body: body(c, 1) },
        { kind: 'delete', docId: b, ifSeqNo: taken.seqNo, ifPrimaryTerm: taken.primaryTerm },
      ]);
      expect(outcomes.map((outcome) => (outcome.ok ? 'ok' : outcome.reason))).toEqual(['ok', 'conflict', 'ok', 'ok']);
      const seqNos = outcomes.flatMap((outcome) => (outcome.ok ? [outcome.seqNo] : []));
      expect([...seqNos].sort((x, y) => x - y)).toEqual(seqNos);
      expect(seqNos[0]).toBeGreaterThan(taken.seqNo);
      const read = await store.read([a, b, c]);
      expect([...read.values()].map((lock) => lock?.body.key ?? null)).toEqual([a, null, c]);
    });

    it('finds documents with a lease that ended before a time, in pages, once visible to search', async () => {
      const { store, refresh } = await open();
      const namespace = unique('sweepns');
      const ids = [0, 1, 2].map((n) => `${namespace}|d|k${n}`);
      for (const [n, id] of ids.entries())
        await store.write([{ kind: 'create', docId: id, body: { ...body(`k${n}`, 1_000 + n, 'o', namespace), lockId: id } }]);
      await store.write([{ kind: 'create', docId: `${namespace}|d|live`, body: { ...body('live', 9_000, 'o', namespace), lockId: `${namespace}|d|live` } }]);
      await refresh();
      const mine = (locks: StoredLock[]): string[] => locks.filter((lock) => lock.body.namespace === namespace).map((lock) => lock.docId);
      const seen: string[] = [];
      let page = await store.findExpired(5_000, 2);
      for (let pages = 0; pages < 100; pages++) {
        seen.push(...mine(page.locks));
        if (page.next === undefined) break;
        page = await store.findExpired(5_000, 2, page.next);
      }
      expect(seen).toEqual(ids);
      expect(mine(await store.list({ namespace, limit: 10 }))).toHaveLength(4);
      expect(mine(await store.list({ namespace, liveAfter: 5_000, limit: 10 }))).toEqual([`${namespace}|d|live`]);
    });

    it('writes, then reads from the primary in the same request: each read sees the writes before it', async () => {
      const { store } = await open();
      const [a, b] = [unique('contract|d|wr'), unique('contract|d|wr')];
      const first = applied((await store.write([{ kind: 'create', docId: b, body: body(b, 1) }]))[0]);
      const { outcomes, read } = await store.writeThenRead(
        [
          { kind: 'create', docId: a, body: body(a, 7) },
          { kind: 'delete', docId: b, ifSeqNo: first.seqNo, ifPrimaryTerm: first.primaryTerm },
        ],
        [a, b],
      );
      const created = applied(outcomes[0]);
      applied(outcomes[1]);
      expect(read.get(a)).toMatchObject({ seqNo: created.seqNo, primaryTerm: created.primaryTerm, body: { key: a } });
      expect(read.get(b)).toBeNull();
    });

    it('finds the live tree documents below a path, and the path itself as the answering copy has it', async () => {
      const { store } = await open();
      const namespace = unique('belowns');
      const tree = (key: string, expiresAt: number): LockDocument => ({
        ...body(key, expiresAt, 'o', namespace),
        granularity: 'tree',
        lockId: `${namespace}|t|${key}`,
      });
      const docs: Array<[string, number]> = [
        ['/a', 9_000],
        ['/a/b', 9_000],
        ['/a/b/c', 9_000],
        ['/a/old', 1_000],
        ['/ab', 9_000],
        ['/z', 9_000],
      ];
      const written = new Map<string, WriteOutcome>();
      for (const [key, expiresAt] of docs)
        written.set(key, (await store.write([{ kind: 'create', docId: `${namespace}|t|${key}`, body: tree(key, expiresAt) }]))[0]!);
      // The caller's latest write to its own path, just acknowledged: on a healthy index the answering
      // copy (the primary) has it, and `self` shows it at its version (the engine's self-check relies on that).
      const before = applied(written.get('/a'));
      const rewritten = applied(
        (
          await store.write([
            { kind: 'replace', docId: `${namespace}|t|/a`, body: tree('/a', 9_500), ifSeqNo: before.seqNo, ifPrimaryTerm: before.primaryTerm },
          ])
        )[0],
      );
      const found = await store.findLiveBelow({ namespace, path: '/a', selfDocId: `${namespace}|t|/a`, liveAfter: 5_000 });
      expect(found.self).toMatchObject({ seqNo: rewritten.seqNo, primaryTerm: rewritten.primaryTerm, body: { key: '/a', maxExpiresAt: 9_500 } });
      expect(found.below.map((lock) => lock.body.key).sort()).toEqual(['/a/b', '/a/b/c']);
      const empty = await store.findLiveBelow({ namespace, path: '/q', selfDocId: `${namespace}|t|/q`, liveAfter: 5_000 });
      expect(empty).toEqual({ self: null, below: [] });
    });

    it('never creates a deleted lock index, and a delete aimed at an earlier incarnation finds nothing', async () => {
      const subject = await open();
      const id = unique('contract|d|gone');
      const before = applied((await subject.store.write([{ kind: 'create', docId: id, body: body(id, 1) }]))[0]);
      await subject.drop();
      await expect(subject.store.read([id])).rejects.toBeInstanceOf(StoreRejectedError);
      const refused = (
        await subject.store.write([{ kind: 'create', docId: id, body: body(id, 1) }]).catch((error: unknown) => [{ ok: false, reason: 'error', error }])
      )[0] as { reason: string; error: unknown };
      expect(refused.reason).toBe('error');
      expect(refused.error).toBeInstanceOf(StoreRejectedError);
      await subject.recreate();
      const after = applied((await subject.store.write([{ kind: 'create', docId: id, body: body(id, 1) }]))[0]);
      expect(after.index).not.toBe(before.index);
      expect(await subject.store.write([{ kind: 'delete', docId: id, ifSeqNo: after.seqNo, ifPrimaryTerm: after.primaryTerm, index: before.index }])).toEqual([
        { ok: false, docId: id, reason: 'missing' },
      ]);
      expect((await subject.store.read([id])).get(id)).not.toBeNull();
    });

    it('applies a conditional write only in the incarnation it was read in, even where the next one has the same (seq_no, term)', async () => {
      const subject = await open();
      // The first writes of each incarnation, in the same order: the same (seq_no, term) in both.
      const ids = [unique('contract|d|pin'), unique('contract|d|pin')];
      const createAll = async () => {
        const created: Array<Extract<WriteOutcome, { ok: true }>> = [];
        for (const id of ids) created.push(applied((await subject.store.write([{ kind: 'create', docId: id, body: body(id, 1) }]))[0]));
        return created;
      };
      const before = await createAll();
      await subject.drop();
      await subject.recreate();
      const after = await createAll();
      expect(after.map(({ seqNo, primaryTerm }) => [seqNo, primaryTerm])).toEqual(before.map(({ seqNo, primaryTerm }) => [seqNo, primaryTerm]));
      expect(after[0]!.index).not.toBe(before[0]!.index);
      const stale = (position: number) => ({
        docId: ids[position]!,
        ifSeqNo: before[position]!.seqNo,
        ifPrimaryTerm: before[position]!.primaryTerm,
        index: before[position]!.index,
      });
      const replace = { kind: 'replace' as const, ...stale(0), body: body(ids[0]!, 99, 'stale') };
      const remove = { kind: 'delete' as const, ...stale(1) };
      // Not applied: `missing`, or `conflict` where the write found an empty index of the old name
      // (the cluster auto-creates one for a replace, functions/store/strays.ts), never the document of
      // the same (seq_no, term) in the new incarnation.
      const notApplied = (position: number) => ({ ok: false, docId: ids[position], reason: expect.stringMatching(/^(missing|conflict)$/) });
      // One op alone, two in one bulk, and with reads after them: each path of the store.
      expect(await subject.store.write([replace])).toEqual([notApplied(0)]);
      expect(await subject.store.write([remove])).toEqual([notApplied(1)]);
      expect(await subject.store.write([replace, remove])).toEqual([notApplied(0), notApplied(1)]);
      const { outcomes, read } = await subject.store.writeThenRead([replace, remove], ids);
      expect(outcomes).toEqual([notApplied(0), notApplied(1)]);
      for (const [position, id] of ids.entries()) {
        expect(read.get(id)).toMatchObject({ seqNo: after[position]!.seqNo, index: after[position]!.index, body: { holders: [{ owner: 'o' }] } });
        expect((await subject.store.read([id])).get(id)).toMatchObject({ seqNo: after[position]!.seqNo, body: { holders: [{ owner: 'o', expiresAt: 1 }] } });
      }
    });
  });
}
