/**
 * The fair queue, on the real Elasticsearch: waiters are served in arrival order, nobody overtakes a
 * queued waiter, a queued writer keeps new readers out, and the lock is handed over in the write
 * that frees it. Channel waiters are told through a WakeNotifier; here one that records what it is
 * told (the AWS one is tested against the emulator in test/functions/wake-notifier.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockHeldError, ValidationError } from '../../functions/core/errors.js';
import type { Grant } from '../../functions/core/model.js';
import type { LockService } from '../../functions/core/service.js';
import type { WakeChannel, WakeDelivery, WakeMessage, WakeNotifier } from '../../functions/core/wake.js';
import type { SearchClient } from '../../functions/store/search-client.js';
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

  async granted(ticket: string, timeoutMs = 5_000): Promise<Grant> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const message = this.for(ticket).find((entry) => entry.outcome === 'granted');
      if (message?.outcome === 'granted') return message.grant;
      if (Date.now() > until) throw new Error(`ticket ${ticket} was never granted: ${JSON.stringify(this.for(ticket))}`);
      await sleep(20);
    }
  }
}

let client: SearchClient;
let engine: LockService;
let notifier: RecordingNotifier;

beforeAll(async () => {
  client = testClient();
  const index = await freshLockIndex(client, 'fair-queue');
  notifier = new RecordingNotifier();
  engine = engineOn(client, index, { notifier, queue: { redeliverAfterMs: 300 } });
});
afterAll(async () => closeTestClient(client));

const doc = (id: string, owner: string) => ({ namespace: 'queue', granularity: 'document', ids: [id], owner });
const task = (name: string) => ({ taskToken: `token-${name}` });
const later = (ms: number) => sleep(ms);
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

  it('a queued writer keeps later readers out, and the readers behind it are then granted together', async () => {
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
    // Handed over in one write: the three readers share its fencing token, above the writer's.
    expect(new Set(readerGrants.map((grant) => grant.fencingToken)).size).toBe(1);
    expect(token(readerGrants[0]!)).toBeGreaterThan(token(writerGrant));
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
});

describe('waiters woken by a channel (wake)', () => {
  it('are granted at once when the lock is free, and the channel hears it too', async () => {
    const outcome = await engine.acquireOrQueue({ ...doc('wake-free', 'pipeline'), wake: task('free') });
    expect('status' in outcome).toBe(false);
    const grant = outcome as Grant;
    expect(notifier.for(grant.leaseId)).toMatchObject([{ outcome: 'granted', grant: { fencingToken: grant.fencingToken } }]);
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('queue when held, and the release hands the lock over and completes the task with a working lease token', async () => {
    const holder = await engine.acquire({ ...doc('wake-held', 'holder'), ttlMs: 10_000 });
    const queued = await engine.acquireOrQueue({ ...doc('wake-held', 'pipeline'), ttlMs: 10_000, wake: task('held') });
    expect(queued).toMatchObject({ status: 'queued', ahead: 0 });
    const ticket = (queued as { ticket: string }).ticket;
    expect(notifier.for(ticket)).toEqual([]);
    await engine.release({ leaseToken: holder.leaseToken });
    const grant = await notifier.granted(ticket);
    expect(grant.leaseId).toBe(ticket);
    expect(token(grant)).toBeGreaterThan(token(holder));
    expect(grant.expiresAt - Date.now()).toBeGreaterThan(5_000);
    const renewed = await engine.renew({ leaseToken: grant.leaseToken, ttlMs: 10_000 });
    expect(BigInt(renewed.fencingToken)).toBeGreaterThanOrEqual(token(grant));
    expect(await engine.release({ leaseToken: renewed.leaseToken })).toMatchObject({ outcome: 'released' });
  });

  it('a waiter whose ticket ran out is skipped and told it failed; the next one is served', async () => {
    const holder = await engine.acquire({ ...doc('wake-dead', 'holder'), ttlMs: 10_000 });
    const dead = (await engine.acquireOrQueue({ ...doc('wake-dead', 'dead'), wake: task('dead'), queueTtlMs: 1_000 })) as { ticket: string };
    const alive = (await engine.acquireOrQueue({ ...doc('wake-dead', 'alive'), ttlMs: 10_000, wake: task('alive') })) as { ticket: string };
    await later(1_000 + 200);
    await engine.release({ leaseToken: holder.leaseToken });
    const grant = await notifier.granted(alive.ticket);
    expect(notifier.for(dead.ticket)).toMatchObject([{ outcome: 'failed', error: 'LockWaitExpiredError' }]);
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('a holder that dies is found by the sweeper, which hands the lock over', async () => {
    await engine.acquire({ ...doc('wake-sweep', 'dies'), ttlMs: 1_000 });
    const queued = (await engine.acquireOrQueue({ ...doc('wake-sweep', 'pipeline'), ttlMs: 10_000, wake: task('sweep') })) as { ticket: string };
    await later(1_000 + 1_200);
    await engine.sweep();
    const grant = await notifier.granted(queued.ticket);
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('a hand-over whose notification never finished (the releaser crashed) is told again by the sweeper, once', async () => {
    const holder = await engine.acquire({ ...doc('wake-crash', 'holder'), ttlMs: 10_000 });
    const queued = (await engine.acquireOrQueue({ ...doc('wake-crash', 'pipeline'), ttlMs: 10_000, wake: task('crash') })) as { ticket: string };
    notifier.answer = (message, count) => {
      if (message.ticket === queued.ticket && count === 1) throw new Error('the releaser died before the notification went out');
      return 'delivered';
    };
    try {
      await engine.release({ leaseToken: holder.leaseToken });
      expect(notifier.for(queued.ticket)).toHaveLength(1);
      await later(300 + 1_200);
      await engine.sweep();
      const grant = await notifier.granted(queued.ticket);
      expect(notifier.for(queued.ticket)).toHaveLength(2);
      // Delivered and noted: the next sweep does not tell it a third time.
      await later(400);
      await engine.sweep();
      expect(notifier.for(queued.ticket)).toHaveLength(2);
      expect(await engine.release({ leaseToken: grant.leaseToken })).toMatchObject({ outcome: 'released' });
    } finally {
      notifier.answer = () => 'delivered';
    }
  });

  it('a notification delivered twice carries the same lease: either copy releases it, once', async () => {
    const holder = await engine.acquire({ ...doc('wake-twice', 'holder'), ttlMs: 10_000 });
    const queued = (await engine.acquireOrQueue({ ...doc('wake-twice', 'pipeline'), ttlMs: 10_000, wake: task('twice') })) as { ticket: string };
    // Delivered, but the process died before noting it: the sweeper delivers it again.
    notifier.answer = (message, count) => {
      if (message.ticket === queued.ticket && count === 1) throw new Error('delivered, then the process died');
      return 'delivered';
    };
    try {
      await engine.release({ leaseToken: holder.leaseToken });
      await later(300 + 1_200);
      await engine.sweep();
      const [first, second] = notifier.for(queued.ticket) as Array<Extract<WakeMessage, { outcome: 'granted' }>>;
      expect(first?.grant.leaseId).toBe(second?.grant.leaseId);
      expect(await engine.release({ leaseToken: second!.grant.leaseToken })).toMatchObject({ outcome: 'released' });
      expect(await engine.release({ leaseToken: first!.grant.leaseToken })).toMatchObject({ outcome: 'not_held' });
    } finally {
      notifier.answer = () => 'delivered';
    }
  });

  it('a task token that has expired gets nothing held: the lock goes on to the next waiter', async () => {
    const holder = await engine.acquire({ ...doc('wake-expired', 'holder'), ttlMs: 10_000 });
    const expired = (await engine.acquireOrQueue({ ...doc('wake-expired', 'timed-out'), ttlMs: 10_000, wake: task('expired') })) as { ticket: string };
    const next = (await engine.acquireOrQueue({ ...doc('wake-expired', 'next'), ttlMs: 10_000, wake: task('next') })) as { ticket: string };
    notifier.answer = (message) => (message.ticket === expired.ticket ? 'gone' : 'delivered');
    try {
      await engine.release({ leaseToken: holder.leaseToken });
      const grant = await notifier.granted(next.ticket);
      expect(grant.owner).toBe('next');
      await engine.release({ leaseToken: grant.leaseToken });
    } finally {
      notifier.answer = () => 'delivered';
    }
  });

  it('bad input changes nothing and names the field and rule', async () => {
    const refusals = await Promise.all([
      engine.acquireOrQueue({ namespace: 'queue', granularity: 'document', ids: ['a', 'b'], owner: 'x', wake: task('multi') }).catch((error: unknown) => error),
      engine.acquireOrQueue({ ...doc('bad', 'x'), waitMs: 1_000, wake: task('wait') }).catch((error: unknown) => error),
      engine.acquire({ ...doc('bad', 'x'), queueTtlMs: 5_000 }).catch((error: unknown) => error),
      engine.acquireOrQueue({ ...doc('bad', 'x'), wake: { taskToken: 't', queueUrl: 'https://sqs.example/q' } }).catch((error: unknown) => error),
    ]);
    const rules = refusals.map((error) => (error as ValidationError).fields?.map((field) => `${field.field}:${field.rule}`));
    expect(refusals.every((error) => error instanceof ValidationError)).toBe(true);
    expect(rules).toEqual([['wake:single_key'], ['waitMs:not_with_wake'], ['queueTtlMs:needs_wake'], ['wake:one_channel']]);
    expect(await engine.inspect({ namespace: 'queue', granularity: 'document', ids: ['bad'] })).toEqual([]);
  });
});
