/**
 * An operator's tools on the real node: revoke takes a lock from its holder (audited, fenced), drain
 * empties a queue and tells its channel waiters, status counts what the lock index holds.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFenced } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LeaseLostError, LockWaitExpiredError, StaleFencingTokenError, ValidationError } from '../../packages/engine/src/errors.js';
import type { LockService } from '../../packages/engine/src/service.js';
import type { WakeChannel, WakeDelivery, WakeMessage, WakeNotifier } from '../../packages/engine/src/wake.js';
import { closeTestClient, engineOn, freshLockIndex, testClient } from '../support/engine.js';

class RecordingNotifier implements WakeNotifier {
  readonly told: WakeMessage[] = [];
  async notify(_: WakeChannel, message: WakeMessage): Promise<WakeDelivery> {
    this.told.push(message);
    return 'delivered';
  }
}

let client: SearchClient;
let index: string;
let engine: LockService;
const notifier = new RecordingNotifier();
const data = `revoked-data-${randomBytes(4).toString('hex')}`;
const operator = { reason: 'stuck after a deploy', by: 'arn:aws:iam::123456789012:role/oncall' };

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'revoke');
  engine = engineOn(client, index, { notifier });
  await client.indices.create({ index: data });
});
afterAll(async () => {
  await client.indices.delete({ index: data }, { ignore: [404] });
  await closeTestClient(client);
});

describe('revoke', () => {
  it('takes the lock from its holder: its renew is refused, its fenced writes lose to the next holder, and the audit record says who and why', async () => {
    const target = { namespace: 'ops', granularity: 'document', ids: ['job-1'] } as const;
    const stuck = await engine.acquire({ ...target, owner: 'stuck-worker', ttlMs: 600_000 });
    await writeFenced(client, { index: data, id: 'job-1', document: { by: 'stuck' }, fencingToken: stuck.fencingToken });

    const revocation = await engine.revoke({ ...target, ...operator });
    expect(revocation.revoked).toEqual([
      expect.objectContaining({ key: 'job-1', leaseId: stuck.leaseId, owner: 'stuck-worker', mode: 'X', fencingToken: stuck.fencingToken }),
    ]);
    expect(revocation).toMatchObject({ by: operator.by, reason: operator.reason, target });
    expect(BigInt(revocation.fencingToken!)).toBeGreaterThan(BigInt(stuck.fencingToken));

    await expect(engine.renew({ leaseToken: stuck.leaseToken })).rejects.toBeInstanceOf(LeaseLostError);
    const next = await engine.acquire({ ...target, owner: 'next-worker' });
    expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(revocation.fencingToken!));
    await writeFenced(client, { index: data, id: 'job-1', document: { by: 'next' }, fencingToken: next.fencingToken });
    await expect(writeFenced(client, { index: data, id: 'job-1', document: { by: 'stuck, late' }, fencingToken: stuck.fencingToken })).rejects.toBeInstanceOf(
      StaleFencingTokenError,
    );
    expect((await engine.release({ leaseToken: stuck.leaseToken })).outcome).toBe('not_held');
    await engine.release({ leaseToken: next.leaseToken });

    await client.indices.refresh({ index });
    const audit = await client.search<{ revocation?: { by: string; reason: string; action: string } }>({ index, query: { match_all: {} }, size: 100 });
    expect(audit.hits.hits.map((hit) => hit._source?.revocation).filter(Boolean)).toContainEqual(
      expect.objectContaining({ action: 'revoke', by: operator.by, reason: operator.reason }),
    );
  });

  it('takes only the lock on the target itself: locks below a directory keep their intentions, and a revoked lease leaves its other keys', async () => {
    const below = await engine.acquire({ namespace: 'ops-tree', granularity: 'tree', path: '/a/b', mode: 'shared', owner: 'file-reader' });
    const reader = await engine.acquire({ namespace: 'ops-tree', granularity: 'tree', path: '/a', mode: 'shared', owner: 'dir-reader' });
    const revocation = await engine.revoke({ namespace: 'ops-tree', granularity: 'tree', path: '/a', ...operator });
    expect(revocation.revoked.map((holder) => [holder.owner, holder.mode])).toEqual([['dir-reader', 'S']]);
    await expect(engine.renew({ leaseToken: reader.leaseToken })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(engine.renew({ leaseToken: below.leaseToken })).resolves.toMatchObject({ leaseId: below.leaseId });

    const several = await engine.acquire({ namespace: 'ops-ids', granularity: 'document', ids: ['x', 'y', 'z'], owner: 'batch' });
    await client.indices.refresh({ index });
    const partial = await engine.revoke({ namespace: 'ops-ids', granularity: 'document', ids: ['x'], ...operator });
    expect(partial.revoked.map((holder) => holder.key)).toEqual(['x']);
    expect(partial.alsoReleased.sort()).toEqual(['y', 'z']);
    expect(await engine.inspect({ namespace: 'ops-ids', granularity: 'document', ids: ['x', 'y', 'z'] })).toEqual([]);
    expect((await engine.release({ leaseToken: several.leaseToken })).outcome).toBe('not_held');
    await engine.release({ leaseToken: below.leaseToken });
  });

  it('hands the lock to the next waiter in the same write, and answers nothing revoked for a free target', async () => {
    const target = { namespace: 'ops-queue', granularity: 'document', ids: ['q'] } as const;
    const holder = await engine.acquire({ ...target, owner: 'holder', ttlMs: 600_000 });
    const waiting = engine.acquire({ ...target, owner: 'waiter', waitMs: 10_000 });
    await waitForQueue(target, 1);
    const revocation = await engine.revoke({ ...target, ...operator });
    expect(revocation.handedOver).toBe(1);
    const granted = await waiting;
    expect(BigInt(granted.fencingToken)).toBeGreaterThan(BigInt(revocation.fencingToken!));
    await engine.release({ leaseToken: granted.leaseToken });
    expect(holder.leaseId).not.toBe(granted.leaseId);

    const nothing = await engine.revoke({ ...target, ...operator });
    expect(nothing).toMatchObject({ revoked: [], fencingToken: null, handedOver: 0 });
  });

  it('refuses bad input by field and rule, and writes nothing', async () => {
    const before = await documentCount();
    await expect(engine.revoke({ namespace: 'ops', granularity: 'document', ids: ['a'], reason: ' ' })).rejects.toMatchObject({
      name: 'ValidationError',
      fields: [expect.objectContaining({ field: 'reason' })],
    });
    await expect(engine.drain({ namespace: 'ops', granularity: 'tree', reason: 'x' })).rejects.toBeInstanceOf(ValidationError);
    expect(await documentCount()).toBe(before);
  });
});

describe('drain', () => {
  it('clears the queue and tells each waiter why: a channel waiter on its channel, a waiter in the call as its answer', async () => {
    const target = { namespace: 'ops-drain', granularity: 'document', ids: ['d'] } as const;
    const holder = await engine.acquire({ ...target, owner: 'holder', ttlMs: 600_000 });
    const queued = await engine.acquireOrQueue({ ...target, owner: 'channel-waiter', requestId: 'r-1', wake: { queueUrl: 'https://sqs.local/q' } });
    expect(queued).toMatchObject({ status: 'queued' });
    const inCall = engine.acquire({ ...target, owner: 'call-waiter', waitMs: 2_000 });
    await waitForQueue(target, 2);

    const drained = await engine.drain({ ...target, ...operator });
    expect(drained.dropped.map((ticket) => ticket.owner).sort()).toEqual(['call-waiter', 'channel-waiter']);
    expect(drained.told).toBe(1);
    expect(notifier.told).toContainEqual(
      expect.objectContaining({ outcome: 'failed', ticket: (queued as { ticket: string }).ticket, message: expect.stringContaining('drained') }),
    );
    await expect(inCall).rejects.toThrow(`drained by ${operator.by} (${operator.reason})`);
    await expect(inCall).rejects.toBeInstanceOf(LockWaitExpiredError);
    await expect(engine.renew({ leaseToken: holder.leaseToken })).resolves.toMatchObject({ leaseId: holder.leaseId });
    await engine.release({ leaseToken: holder.leaseToken });
  });

  // Issue 41, item 9 (failed on main: the drained waiter found its ticket gone, joined again by backoff and was granted).
  it('a drained waiter in the call is out: it never joins again, even when the lock frees before its waitMs, and the note it learns that from outlives the lock', async () => {
    const target = { namespace: 'ops-drain', granularity: 'document', ids: ['out'] } as const;
    const holder = await engine.acquire({ ...target, owner: 'holder', ttlMs: 600_000 });
    const inCall = engine.acquire({ ...target, owner: 'call-waiter', waitMs: 1_500 }).catch((error: unknown) => error);
    await waitForQueue(target, 1);
    const drained = await engine.drain({ ...target, ...operator });
    // The lock is free at once: a waiter that joined again would be granted it.
    await engine.release({ leaseToken: holder.leaseToken });
    const outcome = await inCall;
    expect(outcome).toBeInstanceOf(LockWaitExpiredError);
    expect(outcome).toMatchObject({ ticket: drained.dropped[0]!.ticket, message: expect.stringContaining(`drained by ${operator.by} (${operator.reason})`) });
    expect(await engine.inspect({ ...target, ids: [...target.ids] })).toEqual([]);

    // Nobody holds or waits, but the note stays until the waiter's deadline (plus the skew allowance), then the sweeper removes it.
    const note = await lockSource(target);
    expect(note?.drained).toEqual([expect.objectContaining({ tickets: [drained.dropped[0]!.ticket], by: operator.by, reason: operator.reason })]);
    expect(note?.minExpiresAt).toBe(note?.drained?.[0]?.keepUntil);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, note!.drained![0]!.keepUntil + 50 - Date.now()) + 1_200));
    await engine.sweep();
    expect(await lockSource(target)).toBeUndefined();
  });
});

describe('status', () => {
  it('names the incarnation and counts live locks, holders, waiters and audit records', async () => {
    const held = await engine.acquire({ namespace: 'ops-status', granularity: 'document', ids: ['s1', 's2'], owner: 'counted' });
    await client.indices.refresh({ index });
    const status = await engine.status();
    expect(status.index).toBe(index);
    expect(status.incarnation.startsWith(index)).toBe(true);
    expect(status.shards.primaries).toBe(1);
    expect(status.locks).toBeGreaterThanOrEqual(2);
    expect(status.auditRecords).toBeGreaterThanOrEqual(1);
    expect(status.oldestLease).not.toBeNull();
    expect(status.complete).toBe(true);
    await engine.release({ leaseToken: held.leaseToken });
  });
});

async function waitForQueue(target: { namespace: string; granularity: 'document'; ids: readonly string[] }, length: number): Promise<void> {
  const docId = `${target.namespace}|d|${target.ids[0]}`;
  for (let tries = 0; tries < 200; tries++) {
    const found = await client.get<{ queue?: unknown[] }>({ index, id: docId, routing: target.namespace }, { ignore: [404] }).catch(() => undefined);
    if ((found?._source?.queue?.length ?? 0) >= length) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the queue of ${docId} never reached ${length}`);
}

async function lockSource(target: { namespace: string; granularity: 'document'; ids: readonly string[] }) {
  const docId = `${target.namespace}|d|${target.ids[0]}`;
  const found = await client.get<{ minExpiresAt?: number; drained?: Array<{ tickets: string[]; by: string; reason: string; keepUntil: number }> }>(
    { index, id: docId, routing: target.namespace },
    { ignore: [404] },
  );
  return found.found ? found._source : undefined;
}

async function documentCount(): Promise<number> {
  await client.indices.refresh({ index });
  return (await client.count({ index })).count;
}
