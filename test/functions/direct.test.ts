/**
 * Direct invocation (Step Functions lambda:invoke, EventBridge, SDK invoke): the same JSON as the
 * HTTP body in, the plain result out; refusals are thrown errors whose names a state machine matches.
 */
import { describe, expect, inject, it } from 'vitest';
import { INVOCATION_ERROR_NAMES } from '../../functions/runtime/errors.js';
import { LockHeldError } from '../../packages/engine/src/errors.js';
import { schemaProblems } from '../support/contract.js';
import { sleep } from '../support/engine.js';
import { functionsUnderTest, type Handlers } from '../support/functions.js';
import { lambdaContext, scheduleEvent } from '../support/lambda-events.js';

const { index, handlers, client } = await functionsUnderTest({ label: 'direct' });

async function invoke<T = any>(name: keyof Handlers, payload: unknown): Promise<T> {
  return (await handlers[name](payload, lambdaContext(name))) as T;
}

async function refusal(name: keyof Handlers, payload: unknown): Promise<Error> {
  const error = await invoke(name, payload).then(
    () => undefined,
    (thrown: unknown) => thrown as Error,
  );
  expect(error, `${name} should have thrown`).toBeInstanceOf(Error);
  expect(INVOCATION_ERROR_NAMES).toContain(error!.name);
  return error!;
}

const doc = (id: string, owner = 'sfn') => ({ namespace: 'jobs', granularity: 'document', ids: [id], owner });

describe('direct invocation', () => {
  it('work with an idempotencyKey: the grant, then the recorded result as a plain object; WorkInProgressError by name meanwhile', async () => {
    const work = { ...doc('d-once'), idempotencyKey: true, requestId: 'sqs-message-9' };
    const grant = await invoke('acquire', work);
    expect(schemaProblems('Grant', grant)).toEqual([]);
    expect((await refusal('acquire', work)).name).toBe('WorkInProgressError');
    const release = await invoke('release', { leaseToken: grant.leaseToken, record: { status: 'completed', result: 'done' } });
    expect(schemaProblems('ReleaseResult', release)).toEqual([]);
    const completed = await invoke('acquire', work);
    expect(schemaProblems('CompletedWork', completed)).toEqual([]);
    expect(completed).toMatchObject({ status: 'completed', result: 'done' });
  });

  it('work named by its event: the grant, the result to a redelivery, WorkPayloadMismatchError by name for another payload', async () => {
    const sqs = (body: string) => ({ ...doc('d-event'), event: { messageId: 'm-1', body }, eventKeyPath: 'messageId', payloadPath: 'body' });
    const grant = await invoke('acquire', sqs('{"n":1}'));
    expect(schemaProblems('Grant', grant)).toEqual([]);
    await invoke('release', { leaseToken: grant.leaseToken, record: { status: 'completed', result: 1 } });
    expect(await invoke('acquire', sqs('{"n":1}'))).toMatchObject({ status: 'completed', result: 1 });
    const mismatch = await refusal('acquire', sqs('{"n":2}'));
    expect(mismatch.name).toBe('WorkPayloadMismatchError');
    expect(mismatch).toMatchObject({ retryable: false, found: 'completed' });
  });

  it('acquire returns the grant as a plain object (the HTTP 200 body), renew and release likewise', async () => {
    const grant = await invoke('acquire', { ...doc('d-1'), ttlMs: 5_000, requestId: 'execution-1' });
    expect(schemaProblems('Grant', grant)).toEqual([]);
    expect(grant).not.toHaveProperty('statusCode');
    const renewal = await invoke('renew', { leaseToken: grant.leaseToken });
    expect(schemaProblems('Renewal', renewal)).toEqual([]);
    const release = await invoke('release', { leaseToken: renewal.leaseToken });
    expect(schemaProblems('ReleaseResult', release)).toEqual([]);
    expect(release.outcome).toBe('released');
  });

  it('a held lock throws LockHeldError (the name a Retry/Catch matches), with the conflicts on it', async () => {
    const grant = await invoke('acquire', doc('d-2', 'first'));
    const error = await refusal('acquire', doc('d-2', 'second'));
    expect(error.name).toBe('LockHeldError');
    expect(error).toBeInstanceOf(LockHeldError);
    expect((error as LockHeldError).conflicts[0]?.holders[0]?.owner).toBe('first');
    await invoke('release', { leaseToken: grant.leaseToken });
  });

  it('renew of a released lease throws LeaseLostError; a forged token LeaseTokenMismatchError', async () => {
    const grant = await invoke('acquire', doc('d-3'));
    const [prefix, payload] = grant.leaseToken.split('.');
    expect((await refusal('renew', { leaseToken: `${prefix}.${payload}.${'C'.repeat(43)}` })).name).toBe('LeaseTokenMismatchError');
    await invoke('release', { leaseToken: grant.leaseToken });
    expect((await refusal('renew', { leaseToken: grant.leaseToken })).name).toBe('LeaseLostError');
  });

  it('bad input throws ValidationError listing the fields', async () => {
    const error = await refusal('acquire', { namespace: 'jobs', granularity: 'document', owner: 'x', ttlMs: 'long', mode: 'sometimes' });
    expect(error.name).toBe('ValidationError');
    expect((error as unknown as { fields: Array<{ field: string; rule: string }> }).fields).toEqual([
      expect.objectContaining({ field: 'mode', rule: 'one_of' }),
      expect.objectContaining({ field: 'ttlMs', rule: 'type' }),
    ]);
    const missing = await refusal('acquire', { namespace: 'jobs', granularity: 'document', owner: 'x' });
    expect((missing as unknown as { fields: unknown[] }).fields).toEqual([expect.objectContaining({ field: 'ids', rule: 'required' })]);
    expect((await refusal('sweeper', { batchSize: 0 })).name).toBe('ValidationError');
    expect((await refusal('release', {})).name).toBe('ValidationError');
  });

  it('an acquire with wake needs a requestId (the waiter claims its reservation with the same acquire, by that requestId)', async () => {
    const error = await refusal('acquire', { ...doc('d-wake'), wake: { taskToken: 'a-task-token' } });
    expect(error.name).toBe('ValidationError');
    expect((error as unknown as { fields: Array<{ field: string; rule: string }> }).fields).toEqual([
      expect.objectContaining({ field: 'requestId', rule: 'needs_request_id' }),
    ]);
  });

  it('an EventBridge event carries the request in `detail`', async () => {
    const grant = await invoke('acquire', { ...scheduleEvent(doc('d-4')), 'detail-type': 'LockRequested', source: 'my.app' });
    expect(grant.keys).toEqual([expect.objectContaining({ key: 'd-4' })]);
    await invoke('release', { leaseToken: grant.leaseToken });
  });

  it('inspect, list and health answer plain objects', async () => {
    const grant = await invoke('acquire', doc('d-5', 'owner-5'));
    const inspected = await invoke('inspect', { namespace: 'jobs', granularity: 'document', ids: ['d-5'] });
    expect(schemaProblems('LockStates', inspected)).toEqual([]);
    expect(inspected.locks[0].holders[0].owner).toBe('owner-5');
    await client.indices.refresh({ index });
    const listed = await invoke('list', { namespace: 'jobs', owner: 'owner-5' });
    expect(listed.locks.map((lock: { key: string }) => lock.key)).toEqual(['d-5']);
    const health = await invoke('health', {});
    expect(schemaProblems('Health', health)).toEqual([]);
    // Named after the product that answers, which the test project chose.
    expect(health.store.product).toBe(inject('searchProduct'));
    await invoke('release', { leaseToken: grant.leaseToken });
  });

  it('the sweeper takes its batch size from the payload and reports what it did', async () => {
    await invoke('acquire', { ...doc('d-6'), ttlMs: 1_000 });
    await sleep(1_150);
    await client.indices.refresh({ index });
    const report = await invoke('sweeper', { batchSize: 10, maxBatches: 2 });
    expect(schemaProblems('SweepReport', report)).toEqual([]);
    expect(report.deletedLocks).toBeGreaterThanOrEqual(1);
  });
});
