/**
 * The fair queue, on the real Elasticsearch: waiters are served in arrival order, nobody overtakes a
 * queued waiter, a queued writer keeps new readers out, and the write that frees a lock reserves it
 * for the next waiter, who claims it with a write of its own. Channel waiters are woken through a
 * WakeNotifier; here one that records what it is told (the AWS one is tested against the emulator in
 * test/functions/wake-notifier.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError, ValidationError } from '../../packages/engine/src/errors.js';
import type { Grant } from '../../packages/engine/src/model.js';
import type { LockService } from '../../packages/engine/src/service.js';
import type { WakeChannel, WakeDelivery, WakeMessage, WakeNotifier } from '../../packages/engine/src/wake.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

/** Records every message; `answer` decides each delivery (a thrown error is a delivery that did not finish). */
class RecordingNotifier implements WakeNotifier {
  readonly told: Array<{ channel: WakeChannel; message: WakeMessage }> = [];
  answer: (message: WakeMessage, count: number) => WakeDelivery = () => 'delivered';

  async notify(channel: WakeChannel, message: WakeMessage): Promise<WakeDelivery> {
    this.told.push({ channel, message });
    return this.answer(message, this.told.filter((entry) => entry.message.ticket === message.ticket).length);
  }

  for(ticket: string): WakeMessage[] {
    return this.told.filter((entry) => entry.message.ticket === ticket).map((entry) => entry.message);
  }

  async woken(ticket: string, timeoutMs = 5_000): Promise<Extract<WakeMessage, { outcome: 'ready' }>> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const message = this.for(ticket).find((entry) => entry.outcome === 'ready');
      if (message?.outcome === 'ready') return message;
      if (Date.now() > until) throw new Error(`ticket ${ticket} was never woken: ${JSON.stringify(this.for(ticket))}`);
      await sleep(20);
    }
  }
}

let client: SearchClient;
let index: string;
let engine: LockService;
/** The same lock index, with a short claim window: reservations that lapse. */
let hurried: LockService;
let notifier: RecordingNotifier;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'fair-queue');
  notifier = new RecordingNotifier();
  engine = engineOn(client, index, { notifier, queue: { rewakeAfterMs: 300 } });
  hurried = engineOn(client, index, { notifier, queue: { rewakeAfterMs: 300, claimWindowMs: 400 } });
});
afterAll(async () => closeTestClient(client));

const doc = (id: string, owner: string) => ({ namespace: 'queue', granularity: 'document', ids: [id], owner });
const task = (name: string) => ({ taskToken: `token-${name}` });
const later = (ms: number) => sleep(ms);
async function until(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  for (const giveUp = Date.now() + timeoutMs; !(await check()); await sleep(20)) if (Date.now() > giveUp) throw new Error('never happened');
}
const token = (grant: Grant): bigint => BigInt(grant.fencingToken);

describe('waiters in the call (waitMs)', () => {
  it('are served in arrival order, each with a fencing token larger than the one before', async () => {
    const first = await engine.acquire({ ...doc('fifo', 'holder'), ttlMs: 10_000 });
    const order: string[] = [];
    const grants: Grant[] = [];
    const waiters: Array<Promise<void>> = [];
    for (let index = 0; index < 5; index++) {
      waiters.push(
        engine.acquire({ ...doc('fifo', `w${index}`), ttlMs: 10_000, waitMs: 20_000 }).then(async (grant) => {
          order.push(grant.owner);
          grants.push(grant);
          await later(30);
          await engine.release({ leaseToken: grant.leaseToken });
        }),
      );
      await later(60);
    }
    await engine.release({ leaseToken: first.leaseToken });
    await Promise.all(waiters);
    expect(order).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
    const tokens = [first, ...grants].map(token);
    for (let index = 1; index < tokens.length; index++) expect(tokens[index]!).toBeGreaterThan(tokens[index - 1]!);
    expect(grants.every((grant) => grant.waitedMs !== undefined && grant.waitedMs > 0)).toBe(true);
  });

  it('nobody overtakes a queued waiter: a caller that does not wait is refused, even while the lock is free for a moment', async () => {
    const holder = await engine.acquire({ ...doc('no-overtaking', 'holder'), ttlMs: 1_000 });
    const waiter = engine.acquire({ ...doc('no-overtaking', 'waiter'), ttlMs: 10_000, waitMs: 10_000 });
    await later(100);
    // The holder dies: its lease runs out unreleased. The lock is free, but the waiter came first.
    await later(1_000 + 100);
    const overtaker = await engine.acquire(doc('no-overtaking', 'late')).catch((error: unknown) => error);
    expect(overtaker).toBeInstanceOf(LockHeldError);
    const grant = await waiter;
    expect(grant.owner).toBe('waiter');
    expect(token(grant)).toBeGreaterThan(token(holder));
    expect(grant.expiresAt - Date.now()).toBeGreaterThan(5_000);
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('a queued writer keeps later readers out, and the readers behind it are then served together', async () => {
    const reader = await engine.acquire({ ...doc('rw', 'reader-0'), mode: 'shared', ttlMs: 10_000 });
    const writer = engine.acquire({ ...doc('rw', 'writer'), ttlMs: 10_000, waitMs: 10_000 });
    await later(100);
    const impatient = await engine.acquire({ ...doc('rw', 'reader-late'), mode: 'shared' }).catch((error: unknown) => error);
    expect(impatient).toBeInstanceOf(LockHeldError);
    expect((impatient as LockHeldError).conflicts[0]?.reason).toBe('queued_waiters');
    const events: string[] = [];
    const readers = [1, 2, 3].map((index) =>
      engine.acquire({ ...doc('rw', `reader-${index}`), mode: 'shared', ttlMs: 10_000, waitMs: 10_000 }).then((grant) => {
        events.push(`granted ${grant.owner}`);
        return grant;
      }),
    );
    await later(200);
    expect(events).toEqual([]);
    await engine.release({ leaseToken: reader.leaseToken });
    const writerGrant = await writer;
    events.push('writer granted');
    await later(200);
    expect(events).toEqual(['writer granted']);
    await engine.release({ leaseToken: writerGrant.leaseToken });
    const readerGrants = await Promise.all(readers);
    // Reserved together by the writer's release, each claimed by its own write: all hold at once, above the writer's token.
    const held = await engine.inspect({ namespace: 'queue', granularity: 'document', ids: ['rw'] });
    expect(held[0]?.holders.filter((holder) => !holder.expired)).toHaveLength(3);
    for (const grant of readerGrants) expect(token(grant)).toBeGreaterThan(token(writerGrant));
    for (const grant of readerGrants) await engine.release({ leaseToken: grant.leaseToken });
  });

  it('a waiter that gives up leaves the queue, and those behind it move up', async () => {
    const holder = await engine.acquire({ ...doc('give-up', 'holder'), ttlMs: 10_000 });
    const quitter = engine.acquire({ ...doc('give-up', 'quitter'), waitMs: 300 }).catch((error: unknown) => error);
    await later(50);
    const patient = engine.acquire({ ...doc('give-up', 'patient'), ttlMs: 10_000, waitMs: 10_000 });
    expect(await quitter).toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: holder.leaseToken });
    const grant = await patient;
    expect(grant.owner).toBe('patient');
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('tree locks on one path queue the same way', async () => {
    const target = { namespace: 'queue', granularity: 'tree', path: '/reports/daily' };
    const holder = await engine.acquire({ ...target, owner: 'holder', ttlMs: 10_000 });
    const order: string[] = [];
    const waiters = ['a', 'b'].map(async (owner, index) => {
      await later(index * 80);
      const grant = await engine.acquire({ ...target, owner, ttlMs: 10_000, waitMs: 10_000 });
      order.push(owner);
      await engine.release({ leaseToken: grant.leaseToken });
    });
    await later(250);
    await engine.release({ leaseToken: holder.leaseToken });
    await Promise.all(waiters);
    expect(order).toEqual(['a', 'b']);
  });

  // Issue 41, item 11 (failed on main: the refused claim dropped the waiter's ticket, and its rollback reserved the lock for the waiter behind it).
  it('a claim refused by a lock above keeps its place: its ticket goes back, nobody behind it is served, and it is granted first once the lock above goes', async () => {
    const file = { namespace: 'queue-claim-above', granularity: 'tree', path: '/d/f' } as const;
    const holder = await engine.acquire({ ...file, owner: 'holder', ttlMs: 10_000 });
    const first = engine.acquire({ ...file, owner: 'first', ttlMs: 10_000, waitMs: 20_000 });
    await later(200);
    const behind = (await engine.acquireOrQueue({ ...file, owner: 'behind', ttlMs: 10_000, requestId: 'request-claim-above', wake: task('claim-above') })) as {
      ticket: string;
    };
    expect(behind).toMatchObject({ status: 'queued', ahead: 1 });
    // A directory lock: it writes /d, then waits for the holder of /d/f below it.
    const dir = engine.acquire({ namespace: file.namespace, granularity: 'tree', path: '/d', owner: 'dir', ttlMs: 10_000, waitMs: 10_000 });
    await until(async () =>
      (await engine.inspect({ namespace: file.namespace, granularity: 'tree', path: '/d' })).some((lock) =>
        lock.holders.some((entry) => entry.owner === 'dir'),
      ),
    );
    // The release reserves /d/f for the first waiter; its claim lands, then finds the directory locked above it.
    await engine.release({ leaseToken: holder.leaseToken });
    const dirGrant = await dir;
    // The first waiter keeps failing its claim while the directory is held (queue.retryBlockedMs apart): nobody behind it is served.
    await later(1_500);
    expect(notifier.for(behind.ticket)).toEqual([]);
    await engine.release({ leaseToken: dirGrant.leaseToken });
    const firstGrant = await first;
    expect(firstGrant.owner).toBe('first');
    expect(token(firstGrant)).toBeGreaterThan(token(dirGrant));
    expect(notifier.for(behind.ticket)).toEqual([]);
    await engine.release({ leaseToken: firstGrant.leaseToken });
    await notifier.woken(behind.ticket);
    const behindGrant = await engine.acquire({ ...file, owner: 'behind', ttlMs: 10_000, requestId: 'request-claim-above' });
    await engine.release({ leaseToken: behindGrant.leaseToken });
  });
});

const call = (id: string, owner: string, name: string) => ({ ...doc(id, owner), ttlMs: 10_000, requestId: `request-${name}` });

describe('waiters woken by a channel (wake)', () => {
  it('are answered queued even at a free lock: reserved at once and woken, and only their claim (the same acquire without wake) grants', async () => {
    const outcome = await engine.acquireOrQueue({ ...call('wake-free', 'pipeline', 'free'), wake: task('free') });
    expect(outcome).toMatchObject({ status: 'queued', ahead: 0 });
    const { ticket, reservedUntil } = outcome as { ticket: string; reservedUntil?: number };
    expect(reservedUntil).toBeGreaterThan(Date.now());
    expect(await notifier.woken(ticket)).toMatchObject({ outcome: 'ready', owner: 'pipeline', requestId: 'request-free' });
    const refused = await engine.acquire({ ...doc('wake-free', 'other') }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LockHeldError);
    const grant = await engine.acquire(call('wake-free', 'pipeline', 'free'));
    expect(grant.owner).toBe('pipeline');
    expect(await engine.release({ leaseToken: grant.leaseToken })).toMatchObject({ outcome: 'released' });
  });

  // Issue 30, item 1 (failed on main: the call answered a grant it had given back).
  it('a channel that says nobody waits gets nothing: the answer was never a grant, and the lock goes to the next caller', async () => {
    notifier.answer = (message) => (message.outcome === 'ready' && message.owner === 'gone' ? 'gone' : 'delivered');
    try {
      const outcome = await engine.acquireOrQueue({ ...call('wake-gone', 'gone', 'gone'), wake: task('gone') });
      expect('leaseToken' in outcome).toBe(false);
      expect(await engine.inspect({ namespace: 'queue', granularity: 'document', ids: ['wake-gone'] })).toEqual([]);
      const next = await engine.acquire({ ...doc('wake-gone', 'next'), ttlMs: 10_000 });
      expect(next.owner).toBe('next');
      await engine.release({ leaseToken: next.leaseToken });
    } finally {
      notifier.answer = () => 'delivered';
    }
  });

  it('queue when held; the release reserves the lock for the waiter, whose claim gets a token above the last holder', async () => {
    const holder = await engine.acquire({ ...doc('wake-held', 'holder'), ttlMs: 10_000 });
    const queued = await engine.acquireOrQueue({ ...call('wake-held', 'pipeline', 'held'), wake: task('held') });
    expect(queued).toMatchObject({ status: 'queued', ahead: 0 });
    const ticket = (queued as { ticket: string }).ticket;
    expect(notifier.for(ticket)).toEqual([]);
    await engine.release({ leaseToken: holder.leaseToken });
    await notifier.woken(ticket);
    const grant = await engine.acquire(call('wake-held', 'pipeline', 'held'));
    expect(token(grant)).toBeGreaterThan(token(holder));
    expect(grant.waitedMs).toBeGreaterThan(0);
    const renewed = await engine.renew({ leaseToken: grant.leaseToken, ttlMs: 10_000 });
    expect(await engine.release({ leaseToken: renewed.leaseToken })).toMatchObject({ outcome: 'released' });
  });

  it('a waiter whose ticket ran out is skipped and told it failed; the next one is served', async () => {
    const holder = await engine.acquire({ ...doc('wake-dead', 'holder'), ttlMs: 10_000 });
    const dead = (await engine.acquireOrQueue({ ...call('wake-dead', 'dead', 'dead'), wake: task('dead'), queueTtlMs: 1_000 })) as { ticket: string };
    const alive = (await engine.acquireOrQueue({ ...call('wake-dead', 'alive', 'alive'), wake: task('alive') })) as { ticket: string };
    await later(1_000 + 200);
    await engine.release({ leaseToken: holder.leaseToken });
    await notifier.woken(alive.ticket);
    expect(notifier.for(dead.ticket)).toMatchObject([{ outcome: 'failed', error: 'LockWaitExpiredError' }]);
    const grant = await engine.acquire(call('wake-dead', 'alive', 'alive'));
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('a holder that dies is found by the sweeper, which reserves the lock for the waiter', async () => {
    await engine.acquire({ ...doc('wake-sweep', 'dies'), ttlMs: 1_000 });
    const queued = (await engine.acquireOrQueue({ ...call('wake-sweep', 'pipeline', 'sweep'), wake: task('sweep') })) as { ticket: string };
    await later(1_000 + 1_200);
    await engine.sweep();
    await notifier.woken(queued.ticket);
    const grant = await engine.acquire(call('wake-sweep', 'pipeline', 'sweep'));
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('a wake-up that never went out (the releaser crashed) is sent again by the sweeper', async () => {
    const holder = await engine.acquire({ ...doc('wake-crash', 'holder'), ttlMs: 10_000 });
    const queued = (await engine.acquireOrQueue({ ...call('wake-crash', 'pipeline', 'crash'), wake: task('crash') })) as { ticket: string };
    notifier.answer = (message, count) => {
      if (message.ticket === queued.ticket && count === 1) throw new Error('the releaser died before the wake-up went out');
      return 'delivered';
    };
    try {
      await engine.release({ leaseToken: holder.leaseToken });
      expect(notifier.for(queued.ticket)).toHaveLength(1);
      await later(300 + 1_200);
      await engine.sweep();
      expect(notifier.for(queued.ticket)).toHaveLength(2);
      const grant = await engine.acquire(call('wake-crash', 'pipeline', 'crash'));
      // Claimed: the ticket is gone, so no sweep wakes it again.
      await later(400);
      await engine.sweep();
      expect(notifier.for(queued.ticket)).toHaveLength(2);
      expect(await engine.release({ leaseToken: grant.leaseToken })).toMatchObject({ outcome: 'released' });
    } finally {
      notifier.answer = () => 'delivered';
    }
  });

  // Issue 30, item 4 (failed on main: the second delivery of a grant re-issued an older fencing token).
  it('a wake-up delivered twice makes two claims of one call: one holder, and the second token above the first', async () => {
    const holder = await engine.acquire({ ...doc('wake-twice', 'holder'), ttlMs: 10_000 });
    const queued = (await engine.acquireOrQueue({ ...call('wake-twice', 'pipeline', 'twice'), wake: task('twice') })) as { ticket: string };
    await engine.release({ leaseToken: holder.leaseToken });
    await notifier.woken(queued.ticket);
    const first = await engine.acquire(call('wake-twice', 'pipeline', 'twice'));
    const second = await engine.acquire(call('wake-twice', 'pipeline', 'twice'));
    expect(token(second)).toBeGreaterThan(token(first));
    const held = await engine.inspect({ namespace: 'queue', granularity: 'document', ids: ['wake-twice'] });
    expect(held[0]?.holders.filter((entry) => !entry.expired)).toHaveLength(1);
    expect(await engine.release({ leaseToken: first.leaseToken })).toMatchObject({ outcome: 'not_held' });
    expect(await engine.release({ leaseToken: second.leaseToken })).toMatchObject({ outcome: 'released' });
  });

  // Issue 30, items 2 and 3 (failed on main: a grant told on the channel, then removed, or told after its removal).
  it('a reservation that lapses unclaimed goes to the next waiter; the late claim is refused while that one holds', async () => {
    const holder = await hurried.acquire({ ...doc('wake-late', 'holder'), ttlMs: 10_000 });
    const slow = (await hurried.acquireOrQueue({ ...call('wake-late', 'slow', 'slow'), wake: task('slow') })) as { ticket: string };
    const next = (await hurried.acquireOrQueue({ ...call('wake-late', 'next', 'next'), wake: task('late-next') })) as { ticket: string };
    await hurried.release({ leaseToken: holder.leaseToken });
    await notifier.woken(slow.ticket);
    // The claim window and the skew allowance pass, then the index's refresh, for the sweeper's search to see it.
    await later(400 + 50 + 1_200);
    await hurried.sweep();
    await notifier.woken(next.ticket);
    expect(notifier.for(slow.ticket)).toMatchObject([{ outcome: 'ready' }, { outcome: 'failed', error: 'LockWaitExpiredError' }]);
    const granted = await hurried.acquire(call('wake-late', 'next', 'next'));
    const late = await hurried.acquire(call('wake-late', 'slow', 'slow')).catch((error: unknown) => error);
    expect(late).toBeInstanceOf(LockHeldError);
    await hurried.release({ leaseToken: granted.leaseToken });
  });

  it('a task token that has expired cancels its reservation: the lock goes on to the next waiter', async () => {
    const holder = await engine.acquire({ ...doc('wake-expired', 'holder'), ttlMs: 10_000 });
    const expired = (await engine.acquireOrQueue({ ...call('wake-expired', 'timed-out', 'expired'), wake: task('expired') })) as { ticket: string };
    const next = (await engine.acquireOrQueue({ ...call('wake-expired', 'next', 'expired-next'), wake: task('next') })) as { ticket: string };
    notifier.answer = (message) => (message.ticket === expired.ticket ? 'gone' : 'delivered');
    try {
      await engine.release({ leaseToken: holder.leaseToken });
      await notifier.woken(next.ticket);
      const grant = await engine.acquire(call('wake-expired', 'next', 'expired-next'));
      expect(grant.owner).toBe('next');
      await engine.release({ leaseToken: grant.leaseToken });
    } finally {
      notifier.answer = () => 'delivered';
    }
  });

  // Issue 41, item 10 (failed on main: the holder its claim made was taken for a retry, and the delivery answered LockHeldError, queued_waiters).
  it('a wake call delivered again after its own claim answers as the first did: queued, the same ticket, claimed; no grant, no second ticket', async () => {
    const first = (await engine.acquireOrQueue({ ...call('wake-redelivered', 'pipeline', 'redelivered'), wake: task('redelivered') })) as { ticket: string };
    await notifier.woken(first.ticket);
    const grant = await engine.acquire(call('wake-redelivered', 'pipeline', 'redelivered'));
    const again = await engine.acquireOrQueue({ ...call('wake-redelivered', 'pipeline', 'redelivered'), wake: task('redelivered') });
    expect(again).toMatchObject({ status: 'queued', ticket: first.ticket, ahead: 0, claimed: true });
    expect('leaseToken' in again).toBe(false);
    // The claim's grant stands, and no wake-up follows.
    await expect(engine.renew({ leaseToken: grant.leaseToken, ttlMs: 10_000 })).resolves.toMatchObject({ leaseId: grant.leaseId });
    expect(notifier.for(first.ticket)).toHaveLength(1);
    // No second ticket: once released, the lock is free for anyone.
    expect(await engine.release({ leaseToken: grant.leaseToken })).toMatchObject({ outcome: 'released' });
    const next = await engine.acquire(doc('wake-redelivered', 'next'));
    await engine.release({ leaseToken: next.leaseToken });
  });

  // The sweeper's re-wake (failed on main: rewakeAt stayed where it was, and every sweep woke the waiter again).
  it('a waiter woken again by the sweeper is left alone by the next sweeps until rewakeAfterMs has passed again', async () => {
    const holder = await engine.acquire({ ...doc('wake-rewake', 'holder'), ttlMs: 10_000 });
    const queued = (await engine.acquireOrQueue({ ...call('wake-rewake', 'pipeline', 'rewake'), wake: task('rewake') })) as { ticket: string };
    await engine.release({ leaseToken: holder.leaseToken });
    await notifier.woken(queued.ticket);
    await later(300 + 1_200);
    await engine.sweep();
    expect(notifier.for(queued.ticket)).toHaveLength(2);
    // The index's refresh, for the search to show what the re-wake wrote: well within the next rewakeAfterMs (300 ms) would not do.
    await client.indices.refresh({ index });
    await engine.sweep();
    expect(notifier.for(queued.ticket)).toHaveLength(2);
    await later(300 + 100);
    await client.indices.refresh({ index });
    await engine.sweep();
    expect(notifier.for(queued.ticket)).toHaveLength(3);
    const grant = await engine.acquire(call('wake-rewake', 'pipeline', 'rewake'));
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('bad input changes nothing and names the field and rule', async () => {
    const refusals = await Promise.all([
      engine
        .acquireOrQueue({ namespace: 'queue', granularity: 'document', ids: ['a', 'b'], owner: 'x', requestId: 'r', wake: task('multi') })
        .catch((error: unknown) => error),
      engine.acquireOrQueue({ ...doc('bad', 'x'), requestId: 'r', waitMs: 1_000, wake: task('wait') }).catch((error: unknown) => error),
      engine.acquire({ ...doc('bad', 'x'), queueTtlMs: 5_000 }).catch((error: unknown) => error),
      engine
        .acquireOrQueue({ ...doc('bad', 'x'), requestId: 'r', wake: { taskToken: 't', queueUrl: 'https://sqs.example/q' } })
        .catch((error: unknown) => error),
      engine.acquireOrQueue({ ...doc('bad', 'x'), wake: task('anonymous') }).catch((error: unknown) => error),
    ]);
    const rules = refusals.map((error) => (error as ValidationError).fields?.map((field) => `${field.field}:${field.rule}`));
    expect(refusals.every((error) => error instanceof ValidationError)).toBe(true);
    expect(rules).toEqual([['wake:single_key'], ['waitMs:not_with_wake'], ['queueTtlMs:needs_wake'], ['wake:one_channel'], ['requestId:needs_request_id']]);
    expect(await engine.inspect({ namespace: 'queue', granularity: 'document', ids: ['bad'] })).toEqual([]);
  });
});
