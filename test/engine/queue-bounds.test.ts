/**
 * The bounds of one lock's queue (docs/queues.md, Bounds), on the real store: with `maxTickets: 2` a
 * third waiter is refused with QueueFullError naming the limit and writes nothing (the document keeps
 * its version and its queue), a waiter already queued that tries again is never refused, and once a
 * ticket leaves a new one may join. A ticket's lease and wake channel past their bounds are refused
 * at the request boundary, before any request to the store. The decision itself is checked pure too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { QueueFullError, ValidationError } from '../../packages/engine/src/errors.js';
import { planKeys } from '../../packages/engine/src/keys.js';
import { type Claim, decideAcquire } from '../../packages/engine/src/lock-document.js';
import type { PlannedKey, Queued, StoredTicket } from '../../packages/engine/src/model.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { resolveSettings } from '../../packages/engine/src/settings.js';
import type { StoredLock } from '../../packages/engine/src/store.js';
import type { WakeNotifier } from '../../packages/engine/src/wake.js';
import { closeTestClient, engineOn, freshLockIndex, testClient } from '../support/engine.js';

/** Wake-ups go nowhere: these tests look at the document, not at the channels. */
const quietNotifier: WakeNotifier = { notify: async () => 'delivered' };

let client: SearchClient;
let store: ElasticsearchLockStore;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  const index = await freshLockIndex(client, 'queue-bounds');
  store = new ElasticsearchLockStore(client, index);
  engine = engineOn(client, index, { notifier: quietNotifier, queue: { maxTickets: 2 } });
});
afterAll(async () => closeTestClient(client));

const NAMESPACE = 'bounds';
const doc = (id: string, owner: string) => ({ namespace: NAMESPACE, granularity: 'document' as const, ids: [id], owner, ttlMs: 10_000 });
/** A channel waiter's call: its requestId names it, for a retry and for the claim. */
const waiter = (id: string, owner: string) => ({ ...doc(id, owner), requestId: `request-${id}-${owner}` });
const keyOf = (id: string): PlannedKey => planKeys({ namespace: NAMESPACE, granularity: 'document', ids: [id] }, 'exclusive')[0]!;
const readDocument = async (id: string): Promise<StoredLock | null> => (await store.readPrimary([keyOf(id).docId])).get(keyOf(id).docId) ?? null;
const owners = (lock: StoredLock | null): string[] => (lock?.body.queue ?? []).map((ticket) => ticket.owner);

/** A holder, and two channel waiters behind it: the queue at its bound of 2. */
async function fullQueue(id: string) {
  const holder = await engine.acquire(doc(id, 'holder'));
  const first = (await engine.acquireOrQueue({ ...waiter(id, 'first'), wake: { taskToken: `token-${id}-first` } })) as Queued;
  const second = (await engine.acquireOrQueue({ ...waiter(id, 'second'), wake: { taskToken: `token-${id}-second` } })) as Queued;
  expect([first.status, second.status]).toEqual(['queued', 'queued']);
  return { holder, first, second };
}

describe('a full queue (queue.maxTickets)', () => {
  it('refuses a third channel waiter with QueueFullError naming the limit, and writes nothing', async () => {
    await fullQueue('full');
    const before = await readDocument('full');
    const refusal = await engine.acquireOrQueue({ ...waiter('full', 'third'), wake: { taskToken: 'token-full-third' } }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(QueueFullError);
    expect(refusal).toMatchObject({ key: 'full', limit: 2, queued: 2, retryable: true });
    expect((refusal as QueueFullError).retryAfterMs).toBeGreaterThan(0);
    expect((refusal as Error).message).toBe('the queue of lock full is full (2 tickets, queue.maxTickets); nothing was written');
    const after = await readDocument('full');
    expect({ seqNo: after?.seqNo, primaryTerm: after?.primaryTerm }).toEqual({ seqNo: before?.seqNo, primaryTerm: before?.primaryTerm });
    expect(after?.body).toEqual(before?.body);
    expect(owners(after)).toEqual(['first', 'second']);
  });

  it('refuses a waiter in the call (waitMs) at once, the same way: it does not wait out waitMs', async () => {
    await fullQueue('in-call');
    const before = await readDocument('in-call');
    const started = Date.now();
    const refusal = await engine.acquire({ ...doc('in-call', 'patient'), waitMs: 5_000 }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(QueueFullError);
    expect(refusal).toMatchObject({ key: 'in-call', limit: 2, queued: 2 });
    expect(Date.now() - started).toBeLessThan(2_000);
    const after = await readDocument('in-call');
    expect(after?.seqNo).toBe(before?.seqNo);
    expect(owners(after)).toEqual(['first', 'second']);
  });

  it('never refuses a waiter already queued: a retry of its call keeps its ticket, in its place', async () => {
    await fullQueue('retry');
    const placeOfFirst = (lock: StoredLock | null) => lock?.body.queue?.find((ticket) => ticket.owner === 'first')?.position;
    const before = await readDocument('retry');
    const again = (await engine.acquireOrQueue({ ...waiter('retry', 'first'), wake: { taskToken: 'token-retry-first-again' } })) as Queued;
    expect(again).toMatchObject({ status: 'queued', ahead: 0 });
    const after = await readDocument('retry');
    expect(owners(after)).toEqual(['first', 'second']);
    expect(placeOfFirst(after)).toBe(placeOfFirst(before));
    expect(after?.body.queue?.[0]?.wake).toEqual({ kind: 'task', taskToken: 'token-retry-first-again' });
  });

  it('lets a new waiter join once a ticket has left (its waiter claimed the lock)', async () => {
    const { holder } = await fullQueue('leaves');
    await engine.release({ leaseToken: holder.leaseToken });
    // The release reserved the lock for the first waiter; its claim takes the ticket out of the queue.
    const grant = await engine.acquire(waiter('leaves', 'first'));
    expect(grant.owner).toBe('first');
    expect(owners(await readDocument('leaves'))).toEqual(['second']);
    const third = (await engine.acquireOrQueue({ ...waiter('leaves', 'third'), wake: { taskToken: 'token-leaves-third' } })) as Queued;
    expect(third).toMatchObject({ status: 'queued', ahead: 1 });
    expect(owners(await readDocument('leaves'))).toEqual(['second', 'third']);
    await engine.release({ leaseToken: grant.leaseToken });
  });
});

describe('what a ticket stores, bounded at the request boundary', () => {
  it('refuses a queueTtlMs above queue.ticketTtlMs.maxMs and a wake channel above queue.wakeBytes, naming field and rule; nothing is written', async () => {
    const tooLong = await engine
      .acquireOrQueue({ ...waiter('boundary', 'a'), wake: { taskToken: 'token' }, queueTtlMs: 86_400_001 })
      .catch((error: unknown) => error);
    expect(tooLong).toBeInstanceOf(ValidationError);
    expect((tooLong as ValidationError).fields).toEqual([
      { field: 'queueTtlMs', rule: 'max', message: 'must be at most 86400000 ms (queue.ticketTtlMs.maxMs)' },
    ]);
    // 2,049 bytes of UTF-8 in 1,025 characters: the bound is in bytes.
    const tooLarge = await engine.acquireOrQueue({ ...waiter('boundary', 'b'), wake: { taskToken: `${'é'.repeat(1_024)}x` } }).catch((error: unknown) => error);
    expect(tooLarge).toBeInstanceOf(ValidationError);
    expect((tooLarge as ValidationError).fields).toEqual([
      { field: 'wake.taskToken', rule: 'too_large', message: 'is 2049 bytes (UTF-8), above the 2048 a wake channel may take (queue.wakeBytes)' },
    ]);
    const queueUrl = await engine
      .acquireOrQueue({ ...waiter('boundary', 'c'), wake: { queueUrl: `https://sqs.example/${'q'.repeat(2_048)}` } })
      .catch((error: unknown) => error);
    expect((queueUrl as ValidationError).fields?.map((issue) => `${issue.field}:${issue.rule}`)).toEqual(['wake.queueUrl:too_large']);
    expect(await readDocument('boundary')).toBeNull();
    // At the bound itself, accepted.
    const atBound = await engine.acquireOrQueue({ ...waiter('boundary', 'd'), wake: { taskToken: 't'.repeat(2_048) }, queueTtlMs: 86_400_000 });
    expect(atBound).toMatchObject({ status: 'queued' });
  });
});

describe('the decision (lock-document.ts, decideAcquire over the document as read)', () => {
  const timing = resolveSettings({ maxClockSkewMs: 50, queue: { maxTickets: 2 } });
  const key = keyOf('pure');
  const now = 1_000_000;
  const ticket = (name: string, position: number): StoredTicket => ({
    ticket: `lease-${name}`,
    owner: name,
    mode: 'X',
    ttlMs: 10_000,
    position,
    queuedAt: now - 100,
    expiresAt: now + 60_000,
    request: `request-${name}`,
    call: `call-${name}`,
    wake: { kind: 'task', taskToken: `token-${name}` },
  });
  const held = (queue: StoredTicket[]): StoredLock => ({
    docId: key.docId,
    seqNo: 7,
    primaryTerm: 1,
    index: 'locks',
    body: {
      namespace: NAMESPACE,
      granularity: 'document',
      key: key.key,
      lockId: key.docId,
      holders: [
        { lease: 'holder', proof: 'p', owner: 'holder', mode: 'X', expiresAt: now + 10_000, grantedAt: now - 1_000, fence: '5', request: null, call: null },
      ],
      queue,
      nextPosition: queue.length,
      updatedAt: now - 100,
    },
  });
  const claimOf = (name: string): Claim => ({
    leaseId: `lease-${name}`,
    proof: 'p',
    owner: name,
    requestId: `request-${name}`,
    call: `call-${name}`,
    expiresAt: now + 10_000,
    queue: { ticket: `lease-${name}`, owner: name, mode: 'X', ttlMs: 10_000, expiresAt: now + 60_000, request: `request-${name}`, call: `call-${name}` },
  });

  it('refuses a join that would pass maxTickets, with nothing to write', () => {
    const decision = decideAcquire(held([ticket('a', 0), ticket('b', 1)]), key, claimOf('c'), now, timing);
    expect(decision).toEqual({ kind: 'queue-full', key: 'pure', limit: 2, queued: 2 });
  });

  it('counts only live tickets: one that ran out leaves in the join write', () => {
    const expired = { ...ticket('a', 0), expiresAt: now - 1_000 };
    const decision = decideAcquire(held([expired, ticket('b', 1)]), key, claimOf('c'), now, timing);
    expect(decision.kind).toBe('queued');
  });

  it('a call whose ticket is already queued (a retry, a waiter in the call looking again) is not refused', () => {
    const retry = decideAcquire(held([ticket('a', 0), ticket('b', 1)]), key, { ...claimOf('b'), leaseId: 'lease-b-retry' }, now, timing);
    expect(retry).toMatchObject({ kind: 'queued', ticket: { position: 1 } });
    const ownTicket = decideAcquire(held([ticket('a', 0), ticket('b', 1)]), key, claimOf('b'), now, timing);
    expect(ownTicket.kind).toBe('queued');
  });

  it('settings: frozen defaults of 1,000 tickets and 2,048 bytes; a bound below one is refused by resolveSettings', () => {
    expect(resolveSettings().queue).toMatchObject({ maxTickets: 1_000, wakeBytes: 2_048, ticketTtlMs: { maxMs: 86_400_000 } });
    expect(() => resolveSettings({ queue: { maxTickets: 0 } })).toThrow(/queue\.maxTickets must be an integer >= 1/);
    expect(() => resolveSettings({ queue: { wakeBytes: 1.5 } })).toThrow(/queue\.wakeBytes must be an integer >= 1/);
    expect(() => resolveSettings({ queue: { ticketTtlMs: { defaultMs: 10_000, maxMs: 1_000 } } })).toThrow(/queue\.ticketTtlMs/);
  });
});
