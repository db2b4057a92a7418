/**
 * Renewal in place (operations/renew-in-place.ts), on the real node: one request while nothing has
 * written the lease's documents since its own last write, two once something has, and the document it
 * writes is exactly the one a renewal that reads would write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { maxFencingToken } from '../../packages/engine/src/fencing.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import type { LockDocument } from '../../packages/engine/src/model.js';
import { closeTestClient, engineOn, freshLockIndex, testClient } from '../support/engine.js';
import { requestsOf } from '../support/requests.js';

let client: SearchClient;
let index: string;
const signed = { tokenSigningKey: Buffer.alloc(32, 7) };

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'renew-in-place');
});
afterAll(async () => closeTestClient(client));

const requestsDuring = (work: () => Promise<unknown>): Promise<string[]> => requestsOf(client, work);

const stored = async (docId: string): Promise<LockDocument> => (await client.get<LockDocument>({ index, id: docId, routing: docId.split('|')[0] }))._source!;

describe('a renewal in place', () => {
  it('is one request while nothing wrote the documents since the lease did, and writes what a renewal that reads writes', async () => {
    const engine = engineOn(client, index, signed);
    const target = { namespace: 'inplace', granularity: 'document' as const, ids: ['a', 'b'] };
    const grant = await engine.acquire({ ...target, owner: 'holder', ttlMs: 60_000, requestId: 'call-1' });
    const docIds = target.ids.map((id) => lockDocId('inplace', 'document', id));
    const before = await Promise.all(docIds.map(stored));
    let renewal = grant;
    for (const round of [1, 2]) {
      const paths = await requestsDuring(async () => {
        renewal = { ...renewal, ...(await engine.renew({ leaseToken: renewal.leaseToken, ttlMs: 90_000 })) };
      });
      expect(paths, `renewal ${round}`).toEqual([expect.stringMatching(/\/_bulk$/)]);
      expect(renewal.fencingToken).toBe(grant.fencingToken);
    }
    // The document as the grant left it, but for the expiry, its time and the fence the grant's version gave: no field more or less.
    for (const [position, docId] of docIds.entries()) {
      const holder = before[position]!.holders[0]!;
      expect(await stored(docId)).toEqual({
        ...before[position],
        holders: [{ ...holder, expiresAt: renewal.expiresAt, fence: holder.fence ?? expect.any(String) }],
        minExpiresAt: renewal.expiresAt,
        maxExpiresAt: renewal.expiresAt,
        updatedAt: expect.any(Number),
      });
    }
    // The fences the grant's versions gave, fixed by the first renewal: the grant's token is the largest of them.
    const fences = await Promise.all(docIds.map(async (docId) => (await stored(docId)).holders[0]!.fence!));
    expect(maxFencingToken(fences)).toBe(grant.fencingToken);
    // The lease is still the holder's own: its release is the one conditional delete of its fast path.
    expect(await requestsDuring(() => engine.release({ leaseToken: renewal.leaseToken }))).toHaveLength(1);
  });

  it('is two requests once another holder has written the document, and the next one is in place again once it left', async () => {
    const engine = engineOn(client, index, signed);
    const target = { namespace: 'inplace', granularity: 'document' as const, ids: ['shared'], mode: 'shared' as const };
    const first = await engine.acquire({ ...target, owner: 'first', ttlMs: 60_000 });
    const second = await engine.acquire({ ...target, owner: 'second', ttlMs: 60_000 });
    let renewal = first.leaseToken;
    // Its write at the version it noted fails; the same request read the document on the primary, and the write from that applies.
    const changed = await requestsDuring(async () => {
      renewal = (await engine.renew({ leaseToken: renewal, ttlMs: 60_000 })).leaseToken;
    });
    expect(changed).toHaveLength(2);
    // Two holders: nothing to write in place, a read and a write.
    expect(await requestsDuring(() => engine.renew({ leaseToken: second.leaseToken, ttlMs: 60_000 }))).toHaveLength(2);
    await engine.release({ leaseToken: second.leaseToken });
    // first's token was made when two held it: the renewal reads, and its answer notes a document held alone.
    expect(
      await requestsDuring(async () => {
        renewal = (await engine.renew({ leaseToken: renewal, ttlMs: 60_000 })).leaseToken;
      }),
    ).toHaveLength(2);
    expect(await requestsDuring(() => engine.renew({ leaseToken: renewal, ttlMs: 60_000 }))).toHaveLength(1);
  });

  it('is two requests with a waiter queued, and never hands the waiter the lock while it is held', async () => {
    const engine = engineOn(client, index, signed);
    // The waiter's own client: its polls are not the holder's requests.
    const waiterClient = testClient();
    const target = { namespace: 'inplace', granularity: 'document' as const, ids: ['waited'] };
    const holder = await engine.acquire({ ...target, owner: 'holder', ttlMs: 60_000 });
    const waiting = engineOn(waiterClient, index, signed).acquire({ ...target, owner: 'waiter', ttlMs: 60_000, waitMs: 5_000 });
    // The waiter's ticket is on the document once it is there.
    const docId = lockDocId('inplace', 'document', 'waited');
    for (let tries = 0; !(await stored(docId)).queue?.length && tries < 100; tries++) await new Promise((resolve) => setTimeout(resolve, 20));
    let token = holder.leaseToken;
    for (const round of [1, 2]) {
      const paths = await requestsDuring(async () => {
        token = (await engine.renew({ leaseToken: token, ttlMs: 60_000 })).leaseToken;
      });
      expect(paths, `renewal ${round}`).toHaveLength(2);
    }
    await engine.release({ leaseToken: token });
    await expect(waiting).resolves.toMatchObject({ owner: 'waiter' });
    await waiterClient.close();
  });

  it('of a lease that ran out is never a renewal, and of a revoked lease neither', async () => {
    let now = Date.now();
    const engine = engineOn(client, index, { ...signed, now: () => now });
    const target = { namespace: 'inplace', granularity: 'document' as const, ids: ['ran-out'] };
    const grant = await engine.acquire({ ...target, owner: 'holder', ttlMs: 1_000 });
    now += 1_000;
    await expect(engine.renew({ leaseToken: grant.leaseToken, ttlMs: 1_000 })).rejects.toMatchObject({ name: 'LeaseLostError' });
    const revokedTarget = { namespace: 'inplace', granularity: 'document' as const, ids: ['revoked'] };
    const held = await engine.acquire({ ...revokedTarget, owner: 'holder', ttlMs: 60_000 });
    await engine.revoke({ ...revokedTarget, by: 'arn:aws:iam::123456789012:role/oncall', reason: 'a test' });
    await expect(engine.renew({ leaseToken: held.leaseToken, ttlMs: 60_000 })).rejects.toMatchObject({ name: 'LeaseLostError' });
  });

  // The request leaves as the lease runs out: a stall between the renewal's check and its write that a
  // real node cannot make on demand, so the client is interposed; the write itself runs on the node.
  it('whose write lands after the lease ran out is LeaseLostError, and takes the lease back', async () => {
    let now = Date.now();
    let beforeBulk: (() => void) | undefined;
    const stalling = new Proxy(client, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'bulk') return typeof value === 'function' ? value.bind(target) : value;
        return (...args: unknown[]) => {
          const hook = beforeBulk;
          beforeBulk = undefined;
          hook?.();
          return (value as (...params: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
    const engine = engineOn(stalling, index, { ...signed, now: () => now });
    const target = { namespace: 'inplace', granularity: 'document' as const, ids: ['late'] };
    const grant = await engine.acquire({ ...target, owner: 'holder', ttlMs: 1_000 });
    beforeBulk = () => {
      now += 1_000;
    };
    await expect(engine.renew({ leaseToken: grant.leaseToken, ttlMs: 60_000 })).rejects.toMatchObject({ name: 'LeaseLostError' });
    expect(beforeBulk).toBeUndefined();
    const [state] = await engineOn(client, index).inspect(target);
    expect(state?.holders ?? []).toEqual([]);
  });

  it('of a tree lock writes its documents in place, in one request, as they were but for the expiry, and leaves the marks above alone', async () => {
    const engine = engineOn(client, index, signed);
    const target = { namespace: 'inplace-tree', granularity: 'tree' as const, path: '/reports/2026/q4' };
    const grant = await engine.acquire({ ...target, owner: 'holder', ttlMs: 60_000 });
    const docIds = ['/', '/reports', '/reports/2026', '/reports/2026/q4'].map((path) => lockDocId('inplace-tree', 'tree', path));
    const before = new Map<string, LockDocument>();
    for (const docId of docIds) {
      const found = await client.get<LockDocument>({ index, id: docId, routing: 'inplace-tree' }, { ignore: [404] });
      if (found._source) before.set(docId, found._source);
    }
    expect(before.size).toBeGreaterThan(1);
    let token = grant.leaseToken;
    let expiresAt = 0;
    const paths = await requestsDuring(async () => {
      const renewal = await engine.renew({ leaseToken: token, ttlMs: 90_000 });
      token = renewal.leaseToken;
      expiresAt = renewal.expiresAt;
      expect(renewal.fencingToken).toBe(grant.fencingToken);
    });
    expect(paths).toHaveLength(1);
    for (const [docId, document] of before) {
      const holder = document.holders[0];
      // An ancestor that only carries the mark of a lock below: no lease of ours there, untouched.
      if (!holder) {
        expect(await stored(docId), docId).toEqual(document);
        continue;
      }
      expect(await stored(docId), docId).toEqual({
        ...document,
        holders: [{ ...holder, expiresAt, fence: holder.fence ?? expect.any(String) }],
        minExpiresAt: expiresAt,
        maxExpiresAt: expiresAt,
        updatedAt: expect.any(Number),
      });
    }
    await engine.release({ leaseToken: token });
  });
});
