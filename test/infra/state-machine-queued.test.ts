/**
 * The example state machine that waits for its lock in the lock's fair queue
 * (infra/state-machines/locked-job-queued.asl.json), run by moto's ASL interpreter against the real
 * functions: each lambda:invoke Task goes out as an SQS message (test/support/task-token-worker.ts)
 * and the handlers run in-process. The acquire Task is `.waitForTaskToken`: the worker runs the
 * acquire handler (it answers `queued`) and leaves the task alone; the handlers' own WakeNotifier
 * completes it with a `ready` wake-up (at once for a free lock, or when a release or the sweeper
 * reserves the lock for it) through the real SDK clients, which find the emulator as a deployed
 * function finds AWS: through the SDK's environment (AWS_ENDPOINT_URL). The wake-up grants nothing:
 * the Claim Task's acquire (same requestId, no wake) is what grants.
 *
 * moto 5.2.5 runs concurrent executions of one state machine in one account (the deep copy that
 * broke on live worker threads is fixed: getmoto/moto#10077), so no account per execution here.
 */
import { readFileSync } from 'node:fs';
import { CreateStateMachineCommand, DescribeExecutionCommand, GetExecutionHistoryCommand, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElasticsearchLockStore } from '../../functions/store/index.js';
import { sleep, waitUntil } from '../../infra/lib/wait.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import { type AwsClients, awsClients, awsEmulatorUrl, EMULATOR_REGION, emulatorRoleArn, uniqueName } from '../support/aws.js';
import { schemaProblems } from '../support/contract.js';
import { functionsUnderTest } from '../support/functions.js';
import { lambdaContext } from '../support/lambda-events.js';
import { TaskTokenWorker, viaTaskTokens } from '../support/task-token-worker.js';

type Json = any;

const definition = JSON.parse(readFileSync(new URL('../../infra/state-machines/locked-job-queued.asl.json', import.meta.url), 'utf8'));
const { handlers, client, index } = await functionsUnderTest({ label: 'sfn-queued' });
const store = new ElasticsearchLockStore(client, index);

let aws: AwsClients;
let queueUrl: string;
let worker: TaskTokenWorker;
/** Every function call the worker made: its name, the execution (owner or work input) and what it answered (or the error it threw). */
const calls: Array<{ name: string; payload: Json; answer?: Json; error?: string }> = [];
/** Runs before a claim (an acquire without wake) of the execution it is set for: a test's chance to change the scene first. */
const beforeClaim = new Map<string, () => Promise<void>>();
/** The work step, per lock id (each test its own). */
const works = new Map<string, (payload: { jobId: string; id: string; fencingToken: string }) => Promise<unknown>>();

beforeAll(async () => {
  const endpoint = await awsEmulatorUrl();
  // What the SDK reads when the handlers' notifier builds its clients (on the first wake-up, after this).
  for (const name of Object.keys(process.env))
    if (name.startsWith('AWS_ENDPOINT_URL_') || name === 'AWS_PROFILE' || name === 'AWS_SESSION_TOKEN') delete process.env[name];
  delete process.env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS;
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: EMULATOR_REGION,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  });
  aws = awsClients(endpoint);
  queueUrl = (await aws.sqs.send(new CreateQueueCommand({ QueueName: uniqueName('locked-job-queued') }))).QueueUrl!;
  worker = new TaskTokenWorker(aws, queueUrl, async (functionRef, payload) => {
    const name = functionRef.replace(/^\$\{(\w+)FunctionArn\}$/, '$1').toLowerCase();
    const call: (typeof calls)[number] = { name, payload };
    calls.push(call);
    if (name === 'work') {
      const input = payload as { jobId: string; id: string; fencingToken: string };
      call.answer = await works.get(input.id)!(input);
    } else {
      const before = name === 'acquire' && !(payload as { wake?: unknown }).wake ? beforeClaim.get((payload as { owner: string }).owner) : undefined;
      await before?.();
      try {
        call.answer = await handlers[name as 'acquire' | 'release'](payload, lambdaContext(name));
      } catch (error) {
        call.error = (error as Error).name;
        throw error;
      }
    }
    return call.answer;
  });
});

afterAll(async () => {
  await worker?.stop();
  aws?.destroy();
});

/** A state machine of the definition (as the worker runs it), `change` applied to the Acquire state first. */
async function machine(change: (acquire: Json) => void = () => {}): Promise<string> {
  const copy = structuredClone(definition);
  change(copy.States.Acquire);
  const { stateMachineArn } = await aws.sfn.send(
    new CreateStateMachineCommand({
      name: uniqueName('locked-job-queued'),
      roleArn: emulatorRoleArn(),
      definition: JSON.stringify(viaTaskTokens(copy, queueUrl)),
    }),
  );
  return stateMachineArn!;
}

let defaultMachine: string | undefined;

async function start(id: string, stateMachineArn?: string) {
  defaultMachine ??= await machine();
  const name = uniqueName(`job-${id}`);
  const { executionArn } = await aws.sfn.send(
    new StartExecutionCommand({ stateMachineArn: stateMachineArn ?? defaultMachine, name, input: JSON.stringify({ jobId: `job-${name}`, id }) }),
  );
  return { name, executionArn: executionArn! };
}

const describeExecution = async (executionArn: string) => aws.sfn.send(new DescribeExecutionCommand({ executionArn }));

/** The states the execution entered, in order, the error of each task that failed, and the output of each task that succeeded. */
async function history(executionArn: string) {
  const { events = [] } = await aws.sfn.send(new GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }));
  return {
    entered: events.flatMap((event) => (event.stateEnteredEventDetails?.name ? [event.stateEnteredEventDetails.name] : [])),
    taskErrors: events.flatMap((event) => (event.taskFailedEventDetails?.error ? [event.taskFailedEventDetails.error] : [])),
    taskOutputs: events.flatMap((event) => (event.taskSucceededEventDetails?.output ? [JSON.parse(event.taskSucceededEventDetails.output)] : [])),
    types: events.map((event) => event.type),
  };
}

async function finished(executionArn: string, timeoutMs = 30_000) {
  const outcome = await waitUntil(async () => (await describeExecution(executionArn)).status !== 'RUNNING' || 'RUNNING', { timeoutMs, intervalMs: 100 });
  expect(outcome.ready, `${executionArn} ended within ${timeoutMs} ms`).toBe(true);
  const { status, output, error } = await describeExecution(executionArn);
  return { status, output: output ? JSON.parse(output) : undefined, error, ...(await history(executionArn)) };
}

/** The acquire with `wake` the worker ran for this execution (its owner is the execution name), once it answered. */
async function acquired(executionName: string): Promise<Json> {
  const find = () => calls.find((call) => call.name === 'acquire' && call.payload.wake && call.payload.owner === executionName && call.answer !== undefined);
  const outcome = await waitUntil(() => (find() ? true : 'not acquired yet'), { timeoutMs: 15_000, intervalMs: 50 });
  expect(outcome.ready, `${executionName}'s acquire ran`).toBe(true);
  return find()!.answer;
}

/** The calls the worker made for this execution (acquire, claim, work: a release names only the lease token), by name; a claim is an acquire without wake. */
const callsOf = (executionName: string): string[] =>
  calls
    .filter((call) => call.payload.owner === executionName || call.payload.jobId === `job-${executionName}`)
    .map((call) => (call.name === 'acquire' && !call.payload.wake ? 'claim' : call.name));

/** The claims (acquires without wake) of this execution: what each answered or threw. */
const claimsOf = (executionName: string) => calls.filter((call) => call.name === 'acquire' && !call.payload.wake && call.payload.owner === executionName);

/** The waiters in the lock's queue, as the primary has them: owner (execution name) in order. */
async function queueOf(id: string): Promise<string[]> {
  const docId = lockDocId('jobs', 'document', id);
  const lock = (await store.readPrimary([docId])).get(docId);
  return (lock?.body.queue ?? []).map((ticket) => ticket.owner);
}

/**
 * The reservation of `owner`'s ticket made to lapse: its end moved into the past by a conditional
 * write on the primary's version (what a waiter that takes longer than the claim window meets).
 */
async function lapseReservation(id: string, owner: string): Promise<void> {
  const docId = lockDocId('jobs', 'document', id);
  const lock = (await store.readPrimary([docId])).get(docId);
  const ticket = lock?.body.queue?.find((waiter) => waiter.owner === owner);
  expect(ticket?.reservedUntil, `${owner}'s ticket is reserved`).toBeDefined();
  const past = Date.now() - 5_000;
  const queue = lock!.body.queue!.map((waiter) => (waiter === ticket ? { ...waiter, reservedUntil: past, rewakeAt: past } : waiter));
  const [outcome] = await store.write([
    { kind: 'replace', docId, body: { ...lock!.body, queue }, ifSeqNo: lock!.seqNo, ifPrimaryTerm: lock!.primaryTerm, index: lock!.index },
  ]);
  expect(outcome).toMatchObject({ ok: true });
}

const holdersOf = async (id: string): Promise<string[]> =>
  (
    (await handlers.inspect({ namespace: 'jobs', granularity: 'document', ids: [id] }, lambdaContext('inspect'))) as {
      locks: Array<{ holders: Array<{ owner: string }> }>;
    }
  ).locks.flatMap((lock) => lock.holders.map((holder) => holder.owner));

/** A holder outside Step Functions, through the acquire handler. */
const takeLock = async (id: string, owner = 'holder', ttlMs = 60_000) =>
  (await handlers.acquire({ namespace: 'jobs', granularity: 'document', ids: [id], owner, ttlMs }, lambdaContext('acquire'))) as {
    leaseToken: string;
    fencingToken: string;
  };

const release = (leaseToken: string) => handlers.release({ leaseToken }, lambdaContext('release'));

/** A promise and the function that settles it: work that runs until the test lets it end. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('locked-job-queued: its structure', () => {
  it('Claim is the same acquire as Acquire (target, mode, owner, requestId) without wake, waitMs 0, and only Claim gives the lock its tokens', () => {
    const { Acquire, Claim } = definition.States;
    expect(Acquire.Resource).toBe('arn:aws:states:::lambda:invoke.waitForTaskToken');
    expect(Acquire.Parameters.Payload['requestId.$']).toBe('$$.Execution.Name');
    expect(Acquire.Next).toBe('Claim');
    expect(Acquire.ResultPath).not.toBe('$.lock');
    expect(Claim.Resource).toBe('arn:aws:states:::lambda:invoke');
    expect(Claim.Parameters.FunctionName).toBe(Acquire.Parameters.FunctionName);
    const { wake, queueTtlMs, ...sameCall } = Acquire.Parameters.Payload;
    expect(wake).toEqual({ 'taskToken.$': '$$.Task.Token' });
    expect(queueTtlMs).toBeGreaterThan(0);
    expect(Claim.Parameters.Payload).toEqual({ ...sameCall, waitMs: 0 });
    expect(Claim.ResultSelector).toEqual({ 'leaseToken.$': '$.Payload.leaseToken', 'fencingToken.$': '$.Payload.fencingToken' });
    expect(Claim.ResultPath).toBe('$.lock');
    expect(Claim.Catch[0]).toEqual({ ErrorEquals: ['LockHeldError'], ResultPath: '$.claimError', Next: 'Acquire' });
    expect(Claim.Next).toBe('DoWork');
  });
});

describe('locked-job-queued on the AWS emulator: waiting in the queue, woken by task token', () => {
  it('A Step Functions execution that waits for a lock is resumed when the lock is released', async () => {
    const id = 'queued-1';
    const holder = await takeLock(id);
    const seen: string[] = [];
    works.set(id, async ({ fencingToken }) => {
      seen.push(fencingToken);
      return { done: true };
    });
    const { name, executionArn } = await start(id);

    // It reached Acquire, was queued (202 body from the handler), and waits there: no polling.
    expect(await acquired(name)).toMatchObject({ status: 'queued', ahead: 0, owner: name });
    expect(await queueOf(id)).toEqual([name]);
    await sleep(1_500);
    expect((await describeExecution(executionArn)).status).toBe('RUNNING');
    const waiting = await history(executionArn);
    expect(waiting.entered).toEqual(['Acquire']);
    expect(waiting.types).not.toContain('TaskSucceeded');
    expect(callsOf(name)).toEqual(['acquire']);
    expect(await holdersOf(id)).toEqual(['holder']);

    // The release reserves the lock for the waiter in its write (nobody holds it) and wakes the task.
    let seenAtClaim: { holders: string[]; queue: string[] } | undefined;
    beforeClaim.set(name, async () => {
      seenAtClaim = { holders: await holdersOf(id), queue: await queueOf(id) };
    });
    expect(await release(holder.leaseToken)).toMatchObject({ outcome: 'released' });
    const run = await finished(executionArn);
    expect(run.status).toBe('SUCCEEDED');
    expect(run.entered).toEqual(['Acquire', 'Claim', 'DoWork', 'Release', 'Done']);
    // The wake-up was a hint: when the claim came, the lock was reserved (its ticket still queued), held by nobody.
    expect(seenAtClaim).toEqual({ holders: [], queue: [name] });
    const { ticket } = await acquired(name);
    expect(run.taskOutputs[0]).toMatchObject({
      status: 'ready',
      ticket,
      namespace: 'jobs',
      granularity: 'document',
      ids: [id],
      mode: 'exclusive',
      owner: name,
      requestId: name,
    });
    expect(run.taskOutputs[0]).not.toHaveProperty('leaseToken');
    expect(run.output.ready).toEqual({ ticket, reservedUntilMs: run.taskOutputs[0].reservedUntilMs });
    // The claim's answer is the grant the job works under.
    expect(callsOf(name)).toEqual(['acquire', 'claim', 'work']);
    expect(claimsOf(name)[0]!.answer).toMatchObject({ owner: name, leaseToken: run.output.lock.leaseToken, fencingToken: run.output.lock.fencingToken });
    expect(BigInt(run.output.lock.fencingToken)).toBeGreaterThan(BigInt(holder.fencingToken));
    expect(seen).toEqual([run.output.lock.fencingToken]);
    expect(run.output.release).toEqual({ outcome: 'released' });
    expect(await holdersOf(id)).toEqual([]);
    expect(await queueOf(id)).toEqual([]);
  });

  it('a free lock is reserved at once: the acquire answers queued with reservedUntilMs, wakes the task, and the claim grants', async () => {
    const id = 'queued-free';
    works.set(id, async () => ({ done: true }));
    const { name, executionArn } = await start(id);
    const run = await finished(executionArn);
    expect(run.status).toBe('SUCCEEDED');
    expect(run.entered).toEqual(['Acquire', 'Claim', 'DoWork', 'Release', 'Done']);
    const answer = await acquired(name);
    expect(answer).toMatchObject({ status: 'queued', ahead: 0, owner: name });
    expect(answer).not.toHaveProperty('leaseToken');
    expect(schemaProblems('Queued', answer)).toEqual([]);
    expect(answer.reservedUntilMs).toBeGreaterThan(Date.now() - 60_000);
    expect(run.taskOutputs[0]).toMatchObject({ status: 'ready', ticket: answer.ticket, reservedUntilMs: answer.reservedUntilMs });
    expect(claimsOf(name).map((claim) => claim.answer)).toEqual([expect.objectContaining({ owner: name, fencingToken: run.output.lock.fencingToken })]);
  });

  it('a claim that comes after the reservation lapsed, with the lock taken since, is refused (LockHeldError): back to Acquire, queued again, and served', async () => {
    const id = 'queued-lapsed';
    works.set(id, async () => ({ done: true }));
    const { name, executionArn } = await start(id);
    let other: { leaseToken: string; fencingToken: string } | undefined;
    // Before its first claim: the reservation is made to lapse (its end moved into the past, as 30 s
    // of a slow waiter would) and someone else takes the free lock, dropping the ticket.
    beforeClaim.set(name, async () => {
      beforeClaim.delete(name);
      await lapseReservation(id, name);
      other = await takeLock(id, 'other');
      expect(await queueOf(id)).toEqual([]);
      // The other holder releases a moment later, once the execution is queued again.
      void waitUntil(async () => ((await queueOf(id)).includes(name) ? true : 'not queued again'), { timeoutMs: 20_000, intervalMs: 100 }).then(() =>
        release(other!.leaseToken),
      );
    });
    const run = await finished(executionArn, 45_000);
    expect(run.status).toBe('SUCCEEDED');
    expect(run.entered).toEqual(['Acquire', 'Claim', 'Acquire', 'Claim', 'DoWork', 'Release', 'Done']);
    expect(claimsOf(name).map((claim) => claim.error ?? 'granted')).toEqual(['LockHeldError', 'granted']);
    expect(BigInt(run.output.lock.fencingToken)).toBeGreaterThan(BigInt(other!.fencingToken));
    expect(await holdersOf(id)).toEqual([]);
  });

  it('Two executions queued behind one holder are served in arrival order (the second resumes only after the first releases)', async () => {
    const id = 'queued-2';
    const holder = await takeLock(id);
    const first = await start(id);
    expect(await acquired(first.name)).toMatchObject({ status: 'queued', ahead: 0 });
    const second = await start(id);
    expect(await acquired(second.name)).toMatchObject({ status: 'queued', ahead: 1 });
    expect(await queueOf(id)).toEqual([first.name, second.name]);

    const order: Array<{ job: string; fencingToken: string }> = [];
    const firstWork = gate();
    const firstWorking = gate();
    works.set(id, async ({ jobId, fencingToken }) => {
      order.push({ job: jobId, fencingToken });
      if (jobId === `job-${first.name}`) {
        firstWorking.open();
        await firstWork.opened;
      }
      return { done: true };
    });

    await release(holder.leaseToken);
    await firstWorking.opened;
    expect(await holdersOf(id)).toEqual([first.name]);
    // The first works under the lock; the second stays at Acquire, still queued.
    await sleep(1_500);
    expect((await describeExecution(second.executionArn)).status).toBe('RUNNING');
    expect((await history(second.executionArn)).entered).toEqual(['Acquire']);
    expect(await queueOf(id)).toEqual([second.name]);

    firstWork.open();
    const [one, two] = [await finished(first.executionArn), await finished(second.executionArn)];
    expect(one.status).toBe('SUCCEEDED');
    expect(two.status).toBe('SUCCEEDED');
    expect(order.map((entry) => entry.job)).toEqual([`job-${first.name}`, `job-${second.name}`]);
    const tokens = [holder.fencingToken, one.output.lock.fencingToken, two.output.lock.fencingToken].map(BigInt);
    expect(tokens[1]).toBeGreaterThan(tokens[0]!);
    expect(tokens[2]).toBeGreaterThan(tokens[1]!);
    expect(await holdersOf(id)).toEqual([]);
  });

  it('A waiter whose queue TTL runs out ends FAILED with LockWaitExpiredError, told by the sweeper', async () => {
    const id = 'queued-expired';
    const holder = await takeLock(id);
    works.set(id, async () => {
      throw new Error('a waiter whose wait ran out must not work');
    });
    // The smallest queue TTL (ttl.minMs), and Step Functions' own timeout far enough away not to be the one that tells.
    const shortWait = await machine((acquire) => {
      acquire.Parameters.Payload.queueTtlMs = 1_000;
      acquire.TimeoutSeconds = 60;
    });
    const { name, executionArn } = await start(id, shortWait);
    expect(await acquired(name)).toMatchObject({ status: 'queued' });

    // The holder keeps the lock; once the ticket has run out, a sweep drops it and tells the task.
    await sleep(1_200);
    const swept = await waitUntil(
      async () => {
        await handlers.sweeper({}, lambdaContext('sweeper'));
        return (await describeExecution(executionArn)).status !== 'RUNNING' || 'RUNNING';
      },
      { timeoutMs: 10_000, intervalMs: 250 },
    );
    expect(swept.ready).toBe(true);
    const run = await finished(executionArn);
    expect(run).toMatchObject({ status: 'FAILED', error: 'LockWaitExpiredError' });
    expect(run.entered).toEqual(['Acquire', 'LockWaitExpired']);
    // The task's own error is the notifier's, not Step Functions' timeout (States.Timeout).
    expect(run.taskErrors).toEqual(['LockWaitExpiredError']);
    expect(await queueOf(id)).toEqual([]);
    expect(await holdersOf(id)).toEqual(['holder']);
    expect(callsOf(name)).toEqual(['acquire']);
    await release(holder.leaseToken);
  });

  it('an acquire that throws fails the task with its error name, as a failed Lambda invocation does (AcquireFailed)', async () => {
    const id = 'queued-invalid';
    const invalid = await machine((acquire) => {
      acquire.Parameters.Payload.ttlMs = 1;
    });
    const { name, executionArn } = await start(id, invalid);
    const run = await finished(executionArn);
    expect(run).toMatchObject({ status: 'FAILED', error: 'ValidationError' });
    expect(run.entered).toEqual(['Acquire', 'AcquireFailed']);
    expect(callsOf(name)).toEqual(['acquire']);
    expect(await queueOf(id)).toEqual([]);
  });
});
