/**
 * The example state machine (infra/state-machines/locked-job.asl.json): its structure, the error
 * names it matches against what the functions really throw, and runs of it against the real
 * handlers (direct invocation) on every path.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccessDeniedError,
  FencingRangeError,
  LeaseLostError,
  LeaseTokenMismatchError,
  LockContentionError,
  LockHeldError,
  LockOutcomeUnknownError,
  LockWaitExpiredError,
  PermitLimitMismatchError,
  QuotaExceededError,
  StoreRejectedError,
  StoreUnavailableError,
  ValidationError,
} from '../../functions/core/errors.js';
import { INVOCATION_ERROR_NAMES, InternalError } from '../../functions/runtime/errors.js';
import { deleteLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { type AslDefinition, runStateMachine } from '../support/asl.js';
import { testClient } from '../support/engine.js';
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

describe('state machine structure', () => {
  it('every Next, Default, Choice and Catch target exists, every state is reachable, and every path ends', () => {
    expect(states[definition.StartAt]).toBeDefined();
    for (const name of Object.keys(states)) for (const next of successors(name)) expect(states[next], `${name} -> ${next}`).toBeDefined();
    expect([...reachable([definition.StartAt])].sort()).toEqual(Object.keys(states).sort());
    for (const name of Object.keys(states)) {
      if (!isTerminal(name)) expect(successors(name).length, `${name} leads nowhere`).toBeGreaterThan(0);
    }
  });

  it('once the lock is acquired, every path to an end goes through a release', () => {
    expect(RELEASE_STATES.sort()).toEqual(['ReleaseAfterFailure', 'ReleaseLock']);
    const acquire = states[definition.StartAt];
    expect(acquire.Parameters.FunctionName).toBe('${AcquireFunctionArn}');
    // Without the release states, no end is reachable from what follows a successful acquire.
    const withoutRelease = reachable([acquire.Next], (name) => RELEASE_STATES.includes(name));
    expect([...withoutRelease].filter(isTerminal)).toEqual([]);
    // A Task that can fail without a catch-all would end the execution with the lock held.
    for (const name of withoutRelease) {
      if (states[name].Type !== 'Task') continue;
      const catchAll = (states[name].Catch ?? []).some((rule: { ErrorEquals: string[] }) => rule.ErrorEquals.includes('States.ALL'));
      expect(catchAll, `${name} needs a Catch on States.ALL`).toBe(true);
    }
  });

  it('acquire retries on LockHeldError with exponential backoff', () => {
    const retry = (states[definition.StartAt].Retry as Array<{ ErrorEquals: string[]; BackoffRate: number; MaxAttempts: number }>).find((rule) =>
      rule.ErrorEquals.includes('LockHeldError'),
    );
    expect(retry?.BackoffRate).toBeGreaterThan(1);
    expect(retry?.MaxAttempts).toBeGreaterThan(1);
  });

  it('Retry and Catch match only error names the functions throw (or Step Functions / Lambda ones)', () => {
    const thrown = [
      new ValidationError(undefined, { fields: [] }),
      new AccessDeniedError(undefined, { action: 'acquire', reason: 'not_allowed' }),
      new QuotaExceededError(undefined, { per: 'owner', subject: 'o', limit: 1, held: 1, requested: 1 }),
      new LockHeldError(undefined, { conflicts: [], retryAfterMs: 1 }),
      new PermitLimitMismatchError(undefined, { key: 'k', requestedLimit: 1, heldLimit: null }),
      new LeaseLostError(undefined, { leaseId: 'l', lostKeys: [] }),
      new LeaseTokenMismatchError(undefined, { leaseId: 'l' }),
      new LockWaitExpiredError(undefined, { ticket: 't', key: 'k' }),
      new StoreUnavailableError('x', { operation: 'x' }),
      new StoreRejectedError('x', { operation: 'x' }),
      new LockContentionError(undefined, { keys: [], rounds: 1 }),
      new LockOutcomeUnknownError('x', { operation: 'acquire' }),
      new FencingRangeError('x', { primaryTerm: 1, seqNo: 0 }),
      new InternalError(),
    ].map((error) => error.name);
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

  function invoker(work: (payload: { fencingToken: string; ids: string[] }) => Promise<unknown>) {
    const calls: string[] = [];
    const invoke = async (functionRef: string, payload: unknown) => {
      const name = functionRef.replace(/^\$\{(\w+)FunctionArn\}$/, '$1').toLowerCase();
      calls.push(name);
      if (name === 'work') return work(payload as { fencingToken: string; ids: string[] });
      return handlers[name as 'acquire' | 'renew' | 'release'](payload, lambdaContext(name));
    };
    return { invoke, calls };
  }
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
    expect(run.output.release).toEqual({ outcome: 'released' });
    expect(await heldBy('job-1')).toEqual([]);
  });

  it('a failing work step still releases, then fails with the work error', async () => {
    const { invoke, calls } = invoker(async () => {
      throw Object.assign(new Error('disk full'), { name: 'WorkCrashed' });
    });
    const run = await runStateMachine(definition, { jobId: 'j2', ids: ['job-2'] }, { invoke, executionName: 'exec-2' });
    expect(run).toMatchObject({ status: 'FAILED', error: 'WorkCrashed' });
    expect(run.visited).toContain('ReleaseAfterFailure');
    expect(calls.at(-1)).toBe('release');
    expect(await heldBy('job-2')).toEqual([]);
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
});
