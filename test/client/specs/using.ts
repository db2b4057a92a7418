/**
 * using(): the work runs under the lock, which renews itself and is released at the end whatever
 * happens; transient failures are retried, an acquire always with its one requestId, so a retry
 * after a lost answer gets that grant back instead of a second lock.
 */
import {
  httpTransport,
  LeaseLostError,
  LockClient,
  LockHeldError,
  ValidationError,
  WorkInProgressError,
  WorkPayloadMismatchError,
} from '@es-lease-locks/client';
import { afterEach, expect, it } from 'vitest';
import type { ClientStack } from '../support/client-stack.js';
import { type RecordingProxy, recordingProxy } from '../support/recording-proxy.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const untilAborted = (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

export function usingSpecs(stack: ClientStack): void {
  let proxy: RecordingProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  const direct = () => new LockClient({ transport: httpTransport(stack.details.baseUrl) });
  const throughProxy = async () => {
    proxy = await recordingProxy(stack.details.baseUrl);
    return new LockClient({ transport: httpTransport(proxy.url), settings: { retry: { baseDelayMs: 20 } } });
  };
  const doc = (id: string, ttlMs = 1_500) => ({ namespace: 'using', granularity: 'document' as const, ids: [id], owner: 'worker', ttlMs });
  const holders = async (id: string) =>
    (await direct().inspect({ namespace: 'using', granularity: 'document', ids: [id] })).flatMap((state) => state.holders.filter((holder) => !holder.expired));

  it('runs the work under the lock, renewing it in the background past its TTL, and releases it at the end', async () => {
    const locks = direct();
    const renewals: string[] = [];
    const result = await locks.using(
      doc('long'),
      async (signal, lock) => {
        await sleep(3_500);
        expect(signal.aborted).toBe(false);
        // More than twice the TTL later, the lock is still ours.
        await expect(locks.acquire({ ...doc('long'), owner: 'intruder' })).rejects.toBeInstanceOf(LockHeldError);
        return lock.fencingToken;
      },
      { onRenew: (renewal) => renewals.push(renewal.fencingToken) },
    );
    expect(renewals.length).toBeGreaterThanOrEqual(3);
    expect(new Set(renewals)).toEqual(new Set([result]));
    expect(await holders('long')).toEqual([]);
  });

  it('with an idempotencyKey, runs the work once: a redelivery gets the recorded result, a duplicate meanwhile WorkInProgressError', async () => {
    const locks = direct();
    const runs: string[] = [];
    const message = { ...doc('once', 5_000), idempotencyKey: 'message-17' };
    const first = await locks.using(message, async () => {
      runs.push('first');
      await expect(locks.using({ ...message, owner: 'duplicate' }, async () => runs.push('duplicate'))).rejects.toBeInstanceOf(WorkInProgressError);
      return { written: 3 };
    });
    const seen: string[] = [];
    const again = await locks.using(message, async () => runs.push('again'), { onCompleted: (record) => seen.push(record.status) });
    expect(runs).toEqual(['first']);
    expect(again).toEqual(first);
    expect(seen).toEqual(['completed']);
    expect(await holders('once')).toEqual([]);
  });

  it('with an idempotencyKey, work that throws is recorded failed: the next delivery runs it', async () => {
    const locks = direct();
    const message = { ...doc('once-failed', 5_000), idempotencyKey: 'message-18' };
    await expect(locks.using(message, async () => Promise.reject(new Error('downstream down')))).rejects.toThrow('downstream down');
    expect(await locks.using(message, async () => 'second delivery ran')).toBe('second delivery ran');
    expect(await locks.using(message, async () => 'third delivery ran')).toBe('second delivery ran');
  });

  it('with the key and the payload from the event: a redelivery gets the result, another payload WorkPayloadMismatchError, no key runs unrecorded and says so', async () => {
    const locks = direct();
    const runs: string[] = [];
    const record = (body: string) => ({ messageId: 'm-40', body });
    const fromEvent = (event: unknown) => ({ event, eventKeyPath: 'messageId', payloadPath: (sqs: unknown) => JSON.parse((sqs as { body: string }).body) });
    const work = async () => runs.push('ran');
    expect(await locks.using(doc('from-event', 5_000), work, fromEvent(record('{"a":1,"b":2}')))).toBe(1);
    // The same payload, its JSON written in another order: the recorded result, the work not run.
    expect(await locks.using(doc('from-event', 5_000), work, fromEvent(record('{"b":2,"a":1}')))).toBe(1);
    await expect(locks.using(doc('from-event', 5_000), work, fromEvent(record('{"a":1,"b":3}')))).rejects.toBeInstanceOf(WorkPayloadMismatchError);
    expect(runs).toEqual(['ran']);
    const told: string[] = [];
    const keyless = { event: { body: '{}' }, eventKeyPath: 'messageId', onNoKey: (path: string) => told.push(path) };
    expect(await locks.using(doc('from-event-2', 5_000), async () => 'unrecorded', keyless)).toBe('unrecorded');
    expect(await locks.using(doc('from-event-2', 5_000), async () => 'ran again', keyless)).toBe('ran again');
    expect(told).toEqual(['messageId', 'messageId']);
    expect(await holders('from-event-2')).toEqual([]);
  });

  it('with an idempotencyKey, a result past the size limit is not recorded: ValidationError, and the next delivery runs the work once the lease ends', async () => {
    const locks = direct();
    const message = { ...doc('once-too-large', 1_000), idempotencyKey: 'message-19' };
    const error = await locks.using(message, async () => 'x'.repeat(40_000)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toEqual([expect.objectContaining({ field: 'record.result', rule: 'too_large' })]);
    await sleep(1_200);
    expect(await locks.using(message, async () => 'a reference')).toBe('a reference');
  });

  it('releases when the work throws, and passes the error on', async () => {
    await expect(
      direct().using(doc('throws'), async () => {
        expect(await holders('throws')).toHaveLength(1);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await holders('throws')).toEqual([]);
  });

  it('rejects with the loss when the lock was lost before the work returned, even if the work resolved', async () => {
    const locks = direct();
    const outcome = locks.using(doc('lost'), async (signal, lock) => {
      await locks.transport.release({ leaseToken: lock.leaseToken });
      await untilAborted(signal);
      return 'finished anyway';
    });
    await expect(outcome).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('retries an acquire whose answer was lost with the same requestId: it gets that grant back (reused), never a second lock', async () => {
    const locks = await throughProxy();
    // The first acquire reaches the service and is granted; its answer never comes back.
    proxy!.fate = (request) => (request.path === '/acquire' && proxy!.to('/acquire').length === 0 ? 'lose-answer' : 'pass');
    let runs = 0;
    const grant = await locks.using(doc('lost-answer', 5_000), async (_signal, lock) => {
      runs++;
      const held = await holders('lost-answer');
      // One holder: this grant. The first attempt's lease was taken over, not left beside it.
      expect(held.map((holder) => [holder.owner, holder.fencingToken])).toEqual([['worker', lock.fencingToken]]);
      return lock.grant;
    });
    expect(runs).toBe(1);
    expect(grant.reused).toBe(true);
    const sent = proxy!.to('/acquire').map((request) => JSON.parse(request.body) as { requestId: string });
    expect(sent).toHaveLength(2);
    // Made up once by the client (the caller gave none), the same on the retry.
    expect(sent[0]!.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]!.requestId).toBe(sent[0]!.requestId);
    expect(await holders('lost-answer')).toEqual([]);
  });

  it("keeps the caller's requestId on every retry", async () => {
    const locks = await throughProxy();
    proxy!.fate = (request) => (request.path === '/acquire' && proxy!.to('/acquire').length < 2 ? 'lose-request' : 'pass');
    await locks.using({ ...doc('own-id'), requestId: 'execution-42' }, async () => {});
    expect(proxy!.to('/acquire').map((request) => (JSON.parse(request.body) as { requestId: string }).requestId)).toEqual([
      'execution-42',
      'execution-42',
      'execution-42',
    ]);
  });

  it('a renewal whose answer was lost is retried: the lock is kept', async () => {
    const locks = await throughProxy();
    proxy!.fate = (request) => (request.path === '/renew' && proxy!.to('/renew').length === 0 ? 'lose-answer' : 'pass');
    const result = await locks.using(doc('renew-retry', 2_000), async (signal) => {
      await sleep(2_500);
      return signal.aborted ? 'lost' : 'kept';
    });
    expect(result).toBe('kept');
    expect(proxy!.to('/renew').length).toBeGreaterThanOrEqual(3);
  });

  it('when no renewal gets through, the signal aborts by the local clock before the lease ends, and using() rejects with the loss', async () => {
    const locks = await throughProxy();
    proxy!.fate = (request) => (request.path === '/renew' ? 'lose-request' : 'pass');
    const started = performance.now();
    let abortedAfter = 0;
    await expect(
      locks.using(doc('cut-off', 1_200), async (signal) => {
        await untilAborted(signal);
        abortedAfter = performance.now() - started;
      }),
    ).rejects.toThrow(/ran out by the local clock/);
    // Lost at 1200 - min(500, 1200 / 4) = 900 ms after the acquire was sent, after trying to renew more than once.
    expect(abortedAfter).toBeGreaterThanOrEqual(890);
    expect(abortedAfter).toBeLessThan(1_200);
    expect(proxy!.to('/renew').length).toBeGreaterThanOrEqual(2);
    // The release went through: nobody waits for the lease to run out.
    expect(proxy!.to('/release')).toHaveLength(1);
    expect(await holders('cut-off')).toEqual([]);
  });

  it("the caller's own signal aborts the work, and the lock is released", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('shutting down')), 200);
    await expect(
      direct().using(
        doc('cancel', 10_000),
        async (signal) => {
          await untilAborted(signal);
          throw signal.reason;
        },
        { signal: controller.signal },
      ),
    ).rejects.toThrow('shutting down');
    expect(await holders('cancel')).toEqual([]);
  });
}
