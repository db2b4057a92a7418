/**
 * The example state machine (infra/state-machines/locked-job.asl.json): its structure, the error
 * names it matches against what the functions really throw, and runs of it against the real
 * handlers (direct invocation) on every path, the job running once per jobId (completion records).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INVOCATION_ERROR_NAMES, InternalError } from '../../functions/runtime/errors.js';
import { deleteLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { type AslDefinition, runStateMachine } from '../support/asl.js';
import { testClient } from '../support/engine.js';
import { engineErrorOfEachName } from '../support/engine-errors.js';
import { type Handlers, loadHandlers, setFunctionEnv } from '../support/functions.js';
import { lambdaContext } from '../support/lambda-events.js';

const definition = JSON.parse(readFileSync(new URL('../../infra/state-machines/locked-job.asl.json', import.meta.url), 'utf8')) as AslDefinition;
const states = definition.States;
const RELEASE_STATES = Object.keys(states).filter((name) => states[name].Parameters?.FunctionName === '${ReleaseFunctionArn}');

function successors(name: string): string[] {
  const state = states[name];
  return [
    ...(state.Next ? [state.Next] : []),
    ...(state.Default ? [state.Default] : []),
    ...((state.Choices ?? []) as Array<{ Next: string }>).map((choice) => choice.Next),
    ...((state.Catch ?? []) as Array<{ Next: string }>).map((rule) => rule.Next),
  ];
}

function reachable(from: string[], skip: (name: string) => boolean = () => false): Set<string> {
  const seen = new Set<string>();
  const queue = [...from];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (seen.has(name) || skip(name)) continue;
    seen.add(name);
    queue.push(...successors(name));
  }
  return seen;
}

const isTerminal = (name: string): boolean => ['Succeed', 'Fail'].includes(states[name].Type) || states[name].End === true;

const acquire = states[definition.StartAt];
/** The Choice after the acquire: a completion record (it has a status) ends there, a grant goes on to its Default. */
const wasItDone = states[acquire.Next];

describe('state machine structure', () => {
  it('every Next, Default, Choice and Catch target exists, every state is reachable, and every path ends', () => {
    expect(states[definition.StartAt]).toBeDefined();
    for (const name of Object.keys(states)) for (const next of successors(name)) expect(states[next], `${name} -> ${next}`).toBeDefined();
    expect([...reachable([definition.StartAt])].sort()).toEqual(Object.keys(states).sort());
    for (const name of Object.keys(states)) {
      if (!isTerminal(name)) expect(successors(name).length, `${name} leads nowhere`).toBeGreaterThan(0);
    }
  });

  it("acquires with the jobId as idempotency key, and tells a completion record from a grant before reading a grant's field", () => {
    expect(acquire.Parameters.FunctionName).toBe('${AcquireFunctionArn}');
    expect(acquire.Parameters.Payload).toMatchObject({ 'idempotencyKey.$': '$.jobId', 'requestId.$': '$$.Execution.Name' });
    // The acquire keeps the whole answer: a completion record has no leaseToken to select.
    expect(acquire.ResultSelector).toEqual({ 'answer.$': '$.Payload' });
    expect(wasItDone.Type).toBe('Choice');
    expect(wasItDone.Choices).toEqual([{ Variable: `${acquire.ResultPath}.answer.status`, IsPresent: true, Next: 'AlreadyDone' }]);
    // The record ends the execution at once, holding nothing; its output is the record.
    expect(states.AlreadyDone).toMatchObject({ Type: 'Succeed', OutputPath: `${acquire.ResultPath}.answer` });
  });

  it("records the outcome on release: completed with the work's last answer, failed after a failure", () => {
    expect(states.ReleaseLock.Parameters.Payload.record).toEqual({ status: 'completed', 'result.$': '$.work' });
    expect(states.ReleaseAfterFailure.Parameters.Payload.record).toEqual({ status: 'failed' });
    // A lease lost before the record: released, not recorded, and the execution says so.
    expect(states.ReleaseLock.Catch[0]).toMatchObject({ ErrorEquals: ['LeaseLostError'], Next: 'WorkNotRecorded' });
    expect(states.WorkNotRecorded.Type).toBe('Fail');
  });

  it('once the lock is acquired, every path to an end goes through a release', () => {
    expect(RELEASE_STATES.sort()).toEqual(['ReleaseAfterFailure', 'ReleaseLock']);
    // Without the release states, no end is reachable from what follows a grant.
    const withoutRelease = reachable([wasItDone.Default], (name) => RELEASE_STATES.includes(name));
    expect([...withoutRelease].filter(isTerminal)).toEqual([]);
    // A Task that can fail without a catch-all would end the execution with the lock held.
    for (const name of withoutRelease) {
      if (states[name].Type !== 'Task') continue;
      const catchAll = (states[name].Catch ?? []).some((rule: { ErrorEquals: string[] }) => rule.ErrorEquals.includes('States.ALL'));
      expect(catchAll, `${name} needs a Catch on States.ALL`).toBe(true);
    }
  });

  it('acquire retries on LockHeldError with exponential backoff, and on WorkInProgressError and QueueFullError the same way, all ending LockBusy', () => {
    const retry = (acquire.Retry as Array<{ ErrorEquals: string[]; BackoffRate: number; MaxAttempts: number }>).find((rule) =>
      rule.ErrorEquals.includes('LockHeldError'),
    );
    expect(retry?.BackoffRate).toBeGreaterThan(1);
    expect(retry?.MaxAttempts).toBeGreaterThan(1);
    expect(retry?.ErrorEquals).toContain('WorkInProgressError');
    expect(retry?.ErrorEquals).toContain('QueueFullError');
    const busy = (acquire.Catch as Array<{ ErrorEquals: string[]; Next: string }>).find((rule) => rule.Next === 'LockBusy');
    expect(busy?.ErrorEquals.sort()).toEqual(['LockHeldError', 'QueueFullError', 'WorkInProgressError']);
  });

  it('Retry and Catch match only error names the functions throw (or Step Functions / Lambda ones)', () => {
    const thrown = [...engineErrorOfEachName, new InternalError()].map((error) => error.name);
    expect(thrown.sort()).toEqual([...INVOCATION_ERROR_NAMES].sort());
    const used = Object.values(states).flatMap((state) =>
      [...(state.Retry ?? []), ...(state.Catch ?? [])].flatMap((rule: { ErrorEquals: string[] }) => rule.ErrorEquals),
    );
    for (const name of new Set(used)) {
      if (name.startsWith('States.') || name.startsWith('Lambda.')) continue;
      expect(thrown, `${name} is never thrown by the functions`).toContain(name);
    }
  });
});

describe('state machine runs against the real functions', () => {
  const index = setFunctionEnv({ label: 'sfn' });
  let handlers: Handlers;
  let client: SearchClient;
  beforeAll(async () => {
    handlers = await loadHandlers();
    client = testClient();
  });
  afterAll(async () => {
    await deleteLockIndex(client, index);
    await client.close();
  });

  /** Runs the functions for the machine: the calls made, by name, and the errors the functions threw, by name. */
  function invoker(work: (payload: { fencingToken: string; ids: string[] }) => Promise<unknown>) {
    const calls: string[] = [];
    const errors: string[] = [];
    const invoke = async (functionRef: string, payload: unknown) => {
      const name = functionRef.replace(/^\$\{(\w+)FunctionArn\}$/, '$1').toLowerCase();
      calls.push(name);
      if (name === 'work') return work(payload as { fencingToken: string; ids: string[] });
      try {
        return await handlers[name as 'acquire' | 'renew' | 'release'](payload, lambdaContext(name));
      } catch (error) {
        errors.push((error as Error).name);
        throw error;
      }
    };
    return { invoke, calls, errors };
  }
  /** The definition with the lease's ttlMs (acquire and renew) shortened, for a lease that runs out during a chunk. */
  const withTtl = (ttlMs: number): AslDefinition => {
    const copy = structuredClone(definition);
    copy.States.AcquireLock.Parameters.Payload.ttlMs = ttlMs;
    copy.States.RenewLock.Parameters.Payload.ttlMs = ttlMs;
    return copy;
  };
  const heldBy = async (id: string) =>
    (
      (await handlers.inspect({ namespace: 'jobs', granularity: 'document', ids: [id] }, lambdaContext('inspect'))) as {
        locks: Array<{ holders: Array<{ owner: string }> }>;
      }
    ).locks.flatMap((lock) => lock.holders.map((holder) => holder.owner));

  it('acquires, works in chunks renewing between them, releases, succeeds', async () => {
    let chunks = 0;
    const { invoke, calls } = invoker(async ({ fencingToken }) => {
      expect(BigInt(fencingToken)).toBeGreaterThan(0n);
      expect(await heldBy('job-1')).toEqual(['exec-1']);
      return { done: ++chunks === 3 };
    });
    const run = await runStateMachine(definition, { jobId: 'j1', ids: ['job-1'] }, { invoke, executionName: 'exec-1' });
    expect(run.status).toBe('SUCCEEDED');
    expect(calls).toEqual(['acquire', 'work', 'renew', 'work', 'renew', 'work', 'release']);
    expect(run.visited.slice(0, 4)).toEqual(['AcquireLock', 'WasItDone', 'Locked', 'DoWork']);
    expect(run.output.lock).toEqual({ leaseToken: expect.any(String), fencingToken: expect.any(String) });
    expect(run.output.work).toEqual({ done: true });
    expect(run.output.release).toEqual({ outcome: 'released', recorded: 'completed' });
    expect(await heldBy('job-1')).toEqual([]);
  });

  it('a second execution with the same jobId after the first completed succeeds with the recorded result without running DoWork', async () => {
    const first = invoker(async () => ({ done: true }));
    const done = await runStateMachine(definition, { jobId: 'j5', ids: ['job-5'] }, { invoke: first.invoke, executionName: 'exec-5' });
    expect(done.status).toBe('SUCCEEDED');
    const second = invoker(async () => {
      throw new Error('the job ran twice');
    });
    const again = await runStateMachine(definition, { jobId: 'j5', ids: ['job-5'] }, { invoke: second.invoke, executionName: 'exec-5-again' });
    expect(again.status).toBe('SUCCEEDED');
    expect(again.visited).toEqual(['AcquireLock', 'WasItDone', 'AlreadyDone']);
    expect(second.calls).toEqual(['acquire']);
    expect(again.output).toMatchObject({ status: 'completed', result: done.output.work, owner: 'exec-5', fencingToken: done.output.lock.fencingToken });
    expect(again.output).not.toHaveProperty('leaseToken');
    expect(await heldBy('job-5')).toEqual([]);
    // Another jobId on the same lock is another job: it runs.
    const other = invoker(async () => ({ done: true }));
    expect((await runStateMachine(definition, { jobId: 'j5b', ids: ['job-5'] }, { invoke: other.invoke, executionName: 'exec-5b' })).status).toBe('SUCCEEDED');
    expect(other.calls).toEqual(['acquire', 'work', 'release']);
  });

  it('a failing work step still releases, recording the job as failed, then fails with the work error; the next execution runs the job at once', async () => {
    const { invoke, calls } = invoker(async () => {
      throw Object.assign(new Error('disk full'), { name: 'WorkCrashed' });
    });
    const run = await runStateMachine(definition, { jobId: 'j2', ids: ['job-2'] }, { invoke, executionName: 'exec-2' });
    expect(run).toMatchObject({ status: 'FAILED', error: 'WorkCrashed' });
    expect(run.visited).toContain('ReleaseAfterFailure');
    expect(calls.at(-1)).toBe('release');
    expect(await heldBy('job-2')).toEqual([]);
    // Failed is no record to answer, and the job is nobody's: no WorkInProgressError, no wait.
    const next = invoker(async () => ({ done: true }));
    const rerun = await runStateMachine(definition, { jobId: 'j2', ids: ['job-2'] }, { invoke: next.invoke, executionName: 'exec-2-again' });
    expect(rerun.status).toBe('SUCCEEDED');
    expect(next.calls).toEqual(['acquire', 'work', 'release']);
    expect(next.errors).toEqual([]);
  });

  it("a lease lost between renewals records nothing: released, JobFailed with the renew's error", async () => {
    let chunks = 0;
    const { invoke, calls, errors } = invoker(async () => {
      if (++chunks === 1) await new Promise((resolve) => setTimeout(resolve, 1_100));
      return { done: false };
    });
    const run = await runStateMachine(withTtl(1_000), { jobId: 'j7', ids: ['job-7'] }, { invoke, executionName: 'exec-7' });
    expect(run).toMatchObject({ status: 'FAILED', error: 'LeaseLostError' });
    expect(run.visited.slice(-3)).toEqual(['RenewLock', 'ReleaseAfterFailure', 'JobFailed']);
    expect(calls).toEqual(['acquire', 'work', 'renew', 'release']);
    // The renew's, then the record's: "not recorded", the lease released all the same.
    expect(errors).toEqual(['LeaseLostError', 'LeaseLostError']);
    expect(await heldBy('job-7')).toEqual([]);
  });

  it('a lease that ran out during the last chunk records nothing: released, WorkNotRecorded, and the next execution runs the job again', async () => {
    const { invoke, calls, errors } = invoker(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      return { done: true };
    });
    const run = await runStateMachine(withTtl(1_000), { jobId: 'j8', ids: ['job-8'] }, { invoke, executionName: 'exec-8' });
    expect(run).toMatchObject({ status: 'FAILED', error: 'LeaseLostError' });
    expect(run.cause).toMatch(/not recorded/);
    expect(run.visited.slice(-2)).toEqual(['ReleaseLock', 'WorkNotRecorded']);
    expect(calls).toEqual(['acquire', 'work', 'release']);
    expect(errors).toEqual(['LeaseLostError']);
    expect(await heldBy('job-8')).toEqual([]);
    const next = invoker(async () => ({ done: true }));
    const rerun = await runStateMachine(definition, { jobId: 'j8', ids: ['job-8'] }, { invoke: next.invoke, executionName: 'exec-8-again' });
    expect(rerun.status).toBe('SUCCEEDED');
    expect(next.calls).toEqual(['acquire', 'work', 'release']);
  });

  it('retries while another execution has the job (WorkInProgressError) and, once it is recorded, succeeds with its result without running it', async () => {
    const other = (await handlers.acquire(
      { namespace: 'jobs', granularity: 'document', ids: ['job-6'], owner: 'exec-6-first', ttlMs: 120_000, idempotencyKey: 'j6' },
      lambdaContext('acquire'),
    )) as { leaseToken: string };
    const record = { status: 'completed', result: { done: true, by: 'first' } };
    setTimeout(() => void handlers.release({ leaseToken: other.leaseToken, record }, lambdaContext('release')), 150);
    const { invoke, calls, errors } = invoker(async () => {
      throw new Error('the job ran twice');
    });
    const run = await runStateMachine(definition, { jobId: 'j6', ids: ['job-6'] }, { invoke, executionName: 'exec-6', delayScale: 0.05 });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ status: 'completed', result: { done: true, by: 'first' }, owner: 'exec-6-first' });
    expect(calls.every((call) => call === 'acquire')).toBe(true);
    expect(errors.length).toBeGreaterThan(0);
    expect(new Set(errors)).toEqual(new Set(['WorkInProgressError']));
    expect(await heldBy('job-6')).toEqual([]);
  });

  it('retries while the lock is held and gets it once it is released', async () => {
    const other = (await handlers.acquire({ namespace: 'jobs', granularity: 'document', ids: ['job-3'], owner: 'someone-else' }, lambdaContext('acquire'))) as {
      leaseToken: string;
    };
    setTimeout(() => void handlers.release({ leaseToken: other.leaseToken }, lambdaContext('release')), 150);
    const { invoke, calls } = invoker(async () => ({ done: true }));
    const run = await runStateMachine(definition, { jobId: 'j3', ids: ['job-3'] }, { invoke, executionName: 'exec-3', delayScale: 0.05 });
    expect(run.status).toBe('SUCCEEDED');
    expect(calls.filter((call) => call === 'acquire').length).toBeGreaterThan(1);
    expect(await heldBy('job-3')).toEqual([]);
  });

  it('gives up as LockBusy when the lock stays held, holding nothing', async () => {
    const other = (await handlers.acquire({ namespace: 'jobs', granularity: 'document', ids: ['job-4'], owner: 'someone-else' }, lambdaContext('acquire'))) as {
      leaseToken: string;
    };
    const { invoke, calls } = invoker(async () => ({ done: true }));
    const run = await runStateMachine(definition, { jobId: 'j4', ids: ['job-4'] }, { invoke, executionName: 'exec-4', delayScale: 0.0005 });
    expect(run).toMatchObject({ status: 'FAILED', error: 'LockBusy' });
    expect(calls.every((call) => call === 'acquire')).toBe(true);
    expect(await heldBy('job-4')).toEqual(['someone-else']);
    await handlers.release({ leaseToken: other.leaseToken }, lambdaContext('release'));
  });

  it('gives up as LockBusy when another execution keeps the job through every retry, holding nothing', async () => {
    const other = (await handlers.acquire(
      { namespace: 'jobs', granularity: 'document', ids: ['job-9'], owner: 'exec-9-first', ttlMs: 120_000, idempotencyKey: 'j9' },
      lambdaContext('acquire'),
    )) as { leaseToken: string };
    const { invoke, calls, errors } = invoker(async () => ({ done: true }));
    const run = await runStateMachine(definition, { jobId: 'j9', ids: ['job-9'] }, { invoke, executionName: 'exec-9', delayScale: 0.0005 });
    expect(run).toMatchObject({ status: 'FAILED', error: 'LockBusy' });
    expect(calls.every((call) => call === 'acquire')).toBe(true);
    expect(new Set(errors)).toEqual(new Set(['WorkInProgressError']));
    expect(await heldBy('job-9')).toEqual(['exec-9-first']);
    await handlers.release({ leaseToken: other.leaseToken, record: { status: 'failed' } }, lambdaContext('release'));
  });
});
