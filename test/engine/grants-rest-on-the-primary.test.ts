/**
 * A grant, a renewal or a "not held" answer rests only on a conditional write that succeeded or on a
 * read the primary confirmed. Each case here was a way to break that rule: a plain read answered by a
 * copy that lags (a replica cut off from the master keeps answering reads), or a grant confirmed from
 * the engine's own earlier write that another delivery of the same call had taken over since.
 *
 * Every answer comes from the real node. What one healthy node cannot produce on demand (a lagging
 * copy's answer, another caller's request at an exact point between two of the engine's calls) is
 * made by the interposed store (tools/shared/interposed-store.ts), and each test says where.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LeaseLostError, LockHeldError, StoreUnavailableError } from '../../packages/engine/src/errors.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import type { Grant, LockDocument, LockTarget } from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import type { SettingsOverrides } from '../../packages/engine/src/settings.js';
import type { StoredLock, WriteOp } from '../../packages/engine/src/store.js';
import { interpose, type StoreHooks } from '../../tools/shared/interposed-store.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';
import { docs, tree } from '../support/targets.js';

const SKEW = 50;
let client: SearchClient;
let engine: LockService;
let store: ElasticsearchLockStore;

beforeAll(async () => {
  client = testClient();
  const index = await freshLockIndex(client, 'primary-rule');
  engine = engineOn(client, index);
  store = new ElasticsearchLockStore(client, index);
});
afterAll(async () => closeTestClient(client));

const over = (hooks: StoreHooks, settings: SettingsOverrides = {}): LockService =>
  new LockService(interpose(store, hooks), { maxClockSkewMs: SKEW, ...settings });
const settle = <T>(promise: Promise<T>): Promise<T | Error> =>
  promise.then(
    (value) => value,
    (error: unknown) => error as Error,
  );
/** Live holders per key, by owner (a realtime read after everything settled). */
async function owners(target: LockTarget): Promise<Record<string, string[]>> {
  const states = await engine.inspect(target);
  return Object.fromEntries(
    states
      .map((state) => [state.key, state.holders.filter((holder) => !holder.expired).map((holder) => holder.owner)] as const)
      .filter(([, names]) => names.length > 0),
  );
}

/** The document as the write left it: what a copy that stopped right after that write keeps answering. */
function asWritten(op: WriteOp, outcome: { ok: boolean; seqNo?: number; primaryTerm?: number; index?: string }): StoredLock | undefined {
  if (!outcome.ok || op.kind === 'delete') return undefined;
  return { docId: op.docId, seqNo: outcome.seqNo!, primaryTerm: outcome.primaryTerm!, index: outcome.index!, body: op.body as LockDocument };
}

/**
 * An engine whose plain reads of `docId`, once `betweenAttempts` has run, come from a copy stopped
 * right after the acquire's first write of it (stand-in: a real node will not lag on demand).
 * `betweenAttempts` runs once, at the first pause after that attempt rolled the document back.
 */
function laggingAfterFirstAttempt(docId: string, betweenAttempts: () => Promise<void>): { engine: LockService; ran: () => boolean } {
  let firstAttempt: StoredLock | undefined;
  let rolledBack = false;
  let ran = false;
  const lagging = over(
    {
      write: async (ops, next) => {
        const outcomes = await next(ops);
        ops.forEach((op, position) => {
          if (op.docId === docId && !firstAttempt) firstAttempt = asWritten(op, outcomes[position]!);
          if (op.docId === docId && op.kind === 'delete') rolledBack = true;
        });
        return outcomes;
      },
      read: async (ids, next) => {
        const found = await next(ids);
        if (ran && firstAttempt && ids.includes(docId)) found.set(docId, firstAttempt);
        return found;
      },
    },
    {
      sleep: async (ms) => {
        if (rolledBack && !ran) {
          ran = true;
          await betweenAttempts();
        }
        await sleep(ms);
      },
    },
  );
  return { engine: lagging, ran: () => ran };
}

describe('an acquire that waits is never granted on a lagging copy of its own earlier attempt', () => {
  it('document locks: attempt 1 rolls back x, another caller takes x, and a copy still showing attempt 1 on x does not make attempt 2 a grant', async () => {
    const namespace = 'stale-doc';
    const xId = lockDocId(namespace, 'document', 'x');
    const holderOfY = await engine.acquire(docs(namespace, ['y'], 'holder-of-y', { ttlMs: 10_000 }));
    // Between the two attempts: another caller takes x (rolled back by attempt 1), and y comes free.
    const waiting = laggingAfterFirstAttempt(xId, async () => {
      await engine.acquire(docs(namespace, ['x'], 'other', { ttlMs: 10_000 }));
      await engine.release({ leaseToken: holderOfY.leaseToken });
    });
    const outcome = await settle(waiting.engine.acquire(docs(namespace, ['x', 'y'], 'waiter', { waitMs: 1_500, ttlMs: 10_000 })));
    expect(waiting.ran()).toBe(true);
    expect(outcome).toBeInstanceOf(LockHeldError);
    expect(await owners({ namespace, granularity: 'document', ids: ['x', 'y'] })).toEqual({ x: ['other'] });
  });

  it('tree locks: /p/f waits out a directory holder that runs out; another caller takes /p/f, and a copy still showing attempt 1 does not make attempt 2 a grant', async () => {
    const namespace = 'stale-tree';
    const fileId = lockDocId(namespace, 'tree', '/p/f');
    // /p has had a lock below it (marked), so the file lock's ancestor check writes nothing there.
    await engine.release({ leaseToken: (await engine.acquire(tree(namespace, '/p/g', 'earlier'))).leaseToken });
    await engine.acquire(tree(namespace, '/p', 'directory', { ttlMs: 1_000 }));
    // Between the attempts the directory holder's lease runs out (nobody writes /p) and another caller takes /p/f.
    const waiting = laggingAfterFirstAttempt(fileId, async () => {
      await sleep(1_000 + 2 * SKEW);
      await engine.acquire(tree(namespace, '/p/f', 'other', { ttlMs: 10_000 }));
    });
    const outcome = await settle(waiting.engine.acquire(tree(namespace, '/p/f', 'waiter', { waitMs: 2_500, ttlMs: 10_000 })));
    expect(waiting.ran()).toBe(true);
    expect(outcome).toBeInstanceOf(LockHeldError);
    expect(await owners({ namespace, granularity: 'tree', path: '/p/f' })).toEqual({ '/p/f': ['other'] });
  });
});

describe('a renewal counts only if it landed while the lease was still ours', () => {
  it('a tree lease that ran out is not renewed when a plain read shows it live: the primary decides, and the directory lock keeps its X', async () => {
    const namespace = 'stale-renew';
    const fileId = lockDocId(namespace, 'tree', '/q/f');
    const file = await engine.acquire(tree(namespace, '/q/f', 'paused', { ttlMs: 1_000 }));
    const [asGranted] = [...(await store.readPrimary([fileId])).values()];
    await sleep(1_000 + 2 * SKEW);
    const directory = await engine.acquire(tree(namespace, '/q', 'renamer', { ttlMs: 10_000 }));
    // Stand-in: a read that is not the primary's, showing the lease with time left (here: as granted,
    // with its expiry moved past now). Neither the first check nor the one after the write may rest on it.
    const lagging = over({
      read: async (ids, next) => {
        const found = await next(ids);
        if (ids.includes(fileId) && asGranted) {
          const holders = asGranted.body.holders.map((holder) => ({ ...holder, expiresAt: Date.now() + 5_000 }));
          found.set(fileId, { ...asGranted, seqNo: asGranted.seqNo - 1, body: { ...asGranted.body, holders } });
        }
        return found;
      },
    });
    await expect(lagging.renew({ leaseToken: file.leaseToken, ttlMs: 10_000 })).rejects.toBeInstanceOf(LeaseLostError);
    expect(await owners({ namespace, granularity: 'tree', path: '/q/f' })).toEqual({ '/q': ['renamer'] });
    await engine.release({ leaseToken: directory.leaseToken });
  });

  it('a document renewal whose answer comes back late never returns an expiry with less than half its TTL left: a retryable error instead', async () => {
    const namespace = 'late-renewal';
    const grant = await engine.acquire(docs(namespace, ['r'], 'holder', { ttlMs: 10_000 }));
    // Stand-in: the answer to the renewal's write arrives 1.3 s after it applied (a slow network, a paused process).
    const slow = over({
      write: async (ops, next) => {
        const outcomes = await next(ops);
        await sleep(1_300);
        return outcomes;
      },
    });
    const outcome = await settle(slow.renew({ leaseToken: grant.leaseToken, ttlMs: 2_000 }));
    expect(outcome).toBeInstanceOf(StoreUnavailableError);
    expect(outcome).toMatchObject({ retryable: true });
    // The lease is still held (by its grant's token, which a retry can renew).
    await engine.renew({ leaseToken: grant.leaseToken, ttlMs: 10_000 });
    await engine.release({ leaseToken: grant.leaseToken });
  });
});

describe('a delivery of a call never leaves an earlier delivery believing it holds what it took over', () => {
  it('several keys: a duplicate takes k1 over, then fails on k2; k1 goes back to the first delivery, whose grant of {k1, k2} stands alone', async () => {
    const namespace = 'dup-split';
    const request = docs(namespace, ['k1', 'k2'], 'pipeline', { requestId: 'exec-split', ttlMs: 10_000 });
    let blocker: Grant = await engine.acquire(docs(namespace, ['k2'], 'blocker', { ttlMs: 10_000 }));
    let duplicate: unknown;
    // Stand-in for a second delivery arriving at an exact point: someone takes k2 right before each of
    // its first two writes, and gives it back before its first read, so that it takes k1 over and then fails.
    const second = over({
      write: async (ops, next, call) => {
        if (call <= 2) blocker = await engine.acquire(docs(namespace, ['k2'], 'blocker', { ttlMs: 10_000 }));
        return next(ops);
      },
      read: async (ids, next, call) => {
        if (call === 1) await engine.release({ leaseToken: blocker.leaseToken });
        return next(ids);
      },
    });
    const first = over({
      // The first delivery wrote k1, met the blocker on k2, and re-reads k2: the duplicate runs right then.
      read: async (ids, next, call) => {
        if (call === 1) {
          await engine.release({ leaseToken: blocker.leaseToken });
          duplicate = await settle(second.acquire(request));
          await engine.release({ leaseToken: blocker.leaseToken });
        }
        return next(ids);
      },
    });
    const grant = await first.acquire(request);
    expect(duplicate).toBeInstanceOf(LockHeldError);
    expect(grant.keys.map((key) => key.key)).toEqual(['k1', 'k2']);
    expect(await owners({ namespace, granularity: 'document', ids: ['k1', 'k2'] })).toEqual({ k1: ['pipeline'], k2: ['pipeline'] });
    await expect(engine.acquire(docs(namespace, ['k1'], 'next-caller'))).rejects.toBeInstanceOf(LockHeldError);
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
  });

  it('a chain of take-overs: a delivery that released, or gave up, is never given the key back, however deep its note (simulation seed 862121079)', async () => {
    const namespace = 'dup-chain';
    const request = docs(namespace, ['k'], 'pipeline', { requestId: 'exec-chain', ttlMs: 10_000 });
    const unavailable = (): StoreUnavailableError => new StoreUnavailableError({ operation: 'primary read' }, 'connection refused (stand-in)');
    const first = await engine.acquire(request);
    // Stand-ins for deliveries failing at an exact point: each fails at the primary read that confirms
    // its take-over, and the third one takes over the second right before that read.
    let third: unknown;
    const thirdDelivery = over({
      readPrimary: async (ids, next, call) => {
        if (call > 1) return next(ids);
        // The first delivery is done and releases while its note sits two deep: third → second → first.
        expect((await engine.release({ leaseToken: first.leaseToken })).outcome).not.toBe('released');
        throw unavailable();
      },
    });
    const secondDelivery = over({
      readPrimary: async (ids, next, call) => {
        if (call > 1) return next(ids);
        third = await settle(thirdDelivery.acquire(request));
        throw unavailable();
      },
    });
    const second = await settle(secondDelivery.acquire(request));
    expect(third).toBeInstanceOf(StoreUnavailableError);
    expect(second).toBeInstanceOf(StoreUnavailableError);
    // The third gave the key back to the second, and the second to nobody: the first had let it go.
    expect(await owners({ namespace, granularity: 'document', ids: ['k'] })).toEqual({});
    const next = await engine.acquire(docs(namespace, ['k'], 'next-caller'));
    await engine.release({ leaseToken: next.leaseToken });
  });

  it('several keys: a duplicate takes k1 over, is granted and releases; the first delivery, finishing k2 later, is refused instead of granted a set it no longer holds', async () => {
    const namespace = 'dup-released';
    const request = docs(namespace, ['k1', 'k2'], 'pipeline', { requestId: 'exec-released', ttlMs: 10_000 });
    const blocker: Grant = await engine.acquire(docs(namespace, ['k2'], 'blocker', { ttlMs: 10_000 }));
    let duplicate: Grant | undefined;
    let second: Grant | undefined;
    // Stand-in for the second delivery's timing: k2 is taken right before its first write and free
    // again at its re-read, so that it takes k1 over with nothing else held yet, and then gets k2.
    const secondDelivery = over({
      write: async (ops, next, call) => {
        if (call === 1) second = await engine.acquire(docs(namespace, ['k2'], 'blocker', { ttlMs: 10_000 }));
        return next(ops);
      },
      read: async (ids, next, call) => {
        if (call === 1) await engine.release({ leaseToken: second!.leaseToken });
        return next(ids);
      },
    });
    const first = over({
      // The first delivery wrote k1, met the blocker on k2, and re-reads k2: the second delivery runs to its end right then.
      read: async (ids, next, call) => {
        if (call === 1) {
          await engine.release({ leaseToken: blocker.leaseToken });
          duplicate = await secondDelivery.acquire(request);
          await engine.release({ leaseToken: duplicate.leaseToken });
        }
        return next(ids);
      },
    });
    const outcome = await settle(first.acquire(request));
    expect(duplicate?.reused).toBe(true);
    expect(outcome).toBeInstanceOf(LockHeldError);
    expect((outcome as LockHeldError).conflicts).toMatchObject([{ key: 'k1', reason: 'duplicate_in_progress' }]);
    expect(await owners({ namespace, granularity: 'document', ids: ['k1', 'k2'] })).toEqual({});
  });
});
