/**
 * The example state machine (infra/state-machines/locked-job.asl.json) run by a real ASL
 * interpreter, moto's, beside test/support/asl.ts's runs in state-machine.test.ts: each
 * lambda:invoke Task goes out as an SQS message with a task token (test/support/task-token-worker.ts)
 * and this file answers it by running the real handler in-process. The Choice on the acquire's
 * answer (a completion record or a grant: IsPresent), the Pass that keeps the grant and the Succeed
 * whose output is the record (OutputPath) are moto's own too.
 *
 * Only paths without a Retry: moto reuses a task's token across its Retry attempts and hands each
 * attempt the answer already given to the one before (aws-emulator.test.ts), so the retrying paths
 * (acquire while the lock is held, or the job in progress) stay with asl.ts.
 */
import { readFileSync } from 'node:fs';
import { CreateStateMachineCommand, DescribeExecutionCommand, GetExecutionHistoryCommand, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../infra/lib/wait.js';
import { type AwsClients, awsClients, awsEmulatorUrl, emulatorRoleArn, uniqueName } from '../support/aws.js';
import { functionsUnderTest } from '../support/functions.js';
import { lambdaContext } from '../support/lambda-events.js';
import { TaskTokenWorker, viaTaskTokens } from '../support/task-token-worker.js';

const definition = JSON.parse(readFileSync(new URL('../../infra/state-machines/locked-job.asl.json', import.meta.url), 'utf8'));
const { handlers } = await functionsUnderTest({ label: 'sfn-moto' });

let aws: AwsClients;
let machineArn: string;
let worker: TaskTokenWorker;
let work: (payload: { fencingToken: string }) => Promise<unknown> = async () => ({ done: true });
const calls: string[] = [];

beforeAll(async () => {
  aws = awsClients(await awsEmulatorUrl());
  const queueUrl = (await aws.sqs.send(new CreateQueueCommand({ QueueName: uniqueName('locked-job') }))).QueueUrl!;
  const { stateMachineArn } = await aws.sfn.send(
    new CreateStateMachineCommand({
      name: uniqueName('locked-job'),
      roleArn: emulatorRoleArn(),
      definition: JSON.stringify(viaTaskTokens(definition, queueUrl)),
    }),
  );
  machineArn = stateMachineArn!;
  worker = new TaskTokenWorker(aws, queueUrl, async (functionRef, payload) => {
    const name = functionRef.replace(/^\$\{(\w+)FunctionArn\}$/, '$1').toLowerCase();
    calls.push(name);
    if (name === 'work') return work(payload as { fencingToken: string });
    return handlers[name as 'acquire' | 'renew' | 'release'](payload, lambdaContext(name));
  });
});

afterAll(async () => {
  await worker?.stop();
  aws?.destroy();
});

/** Runs the machine to its end: status, output, error, and the states it entered in order. */
async function execute(input: unknown, executionName: string) {
  calls.length = 0;
  const { executionArn } = await aws.sfn.send(new StartExecutionCommand({ stateMachineArn: machineArn, name: executionName, input: JSON.stringify(input) }));
  const outcome = await waitUntil(async () => (await aws.sfn.send(new DescribeExecutionCommand({ executionArn }))).status !== 'RUNNING' || 'RUNNING', {
    timeoutMs: 30_000,
    intervalMs: 100,
  });
  expect(outcome.ready, `${executionName} ended within 30 s`).toBe(true);
  const { status, output, error } = await aws.sfn.send(new DescribeExecutionCommand({ executionArn }));
  const { events = [] } = await aws.sfn.send(new GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }));
  const visited = events.flatMap((event) => (event.stateEnteredEventDetails?.name ? [event.stateEnteredEventDetails.name] : []));
  return { status, output: output ? JSON.parse(output) : undefined, error, visited };
}

const heldBy = async (id: string) =>
  (
    (await handlers.inspect({ namespace: 'jobs', granularity: 'document', ids: [id] }, lambdaContext('inspect'))) as {
      locks: Array<{ holders: Array<{ owner: string }> }>;
    }
  ).locks.flatMap((lock) => lock.holders.map((holder) => holder.owner));

describe('locked-job on the AWS emulator, against the real functions', () => {
  it('acquires (the execution name as owner), works in chunks renewing between them, releases, succeeds', async () => {
    const name = uniqueName('exec-1');
    let chunks = 0;
    work = async ({ fencingToken }) => {
      expect(BigInt(fencingToken)).toBeGreaterThan(0n);
      expect(await heldBy('moto-job-1')).toEqual([name]);
      return { done: ++chunks === 3 };
    };
    const run = await execute({ jobId: 'j1', ids: ['moto-job-1'] }, name);
    expect(run.status).toBe('SUCCEEDED');
    expect(calls).toEqual(['acquire', 'work', 'renew', 'work', 'renew', 'work', 'release']);
    expect(run.visited).toEqual([
      'AcquireLock',
      'WasItDone',
      'Locked',
      'DoWork',
      'MoreWork',
      'RenewLock',
      'DoWork',
      'MoreWork',
      'RenewLock',
      'DoWork',
      'MoreWork',
      'ReleaseLock',
      'Done',
    ]);
    expect(run.output.lock).toEqual({ leaseToken: expect.any(String), fencingToken: expect.any(String) });
    expect(run.output.release).toEqual({ outcome: 'released', recorded: 'completed' });
    expect(await heldBy('moto-job-1')).toEqual([]);
  });

  it('a second execution with the same jobId after the first completed succeeds with the recorded result without running DoWork', async () => {
    const first = uniqueName('exec-3');
    work = async () => ({ done: true });
    const done = await execute({ jobId: 'j3', ids: ['moto-job-3'] }, first);
    expect(done.status).toBe('SUCCEEDED');
    work = async () => {
      throw new Error('the job ran twice');
    };
    const again = await execute({ jobId: 'j3', ids: ['moto-job-3'] }, uniqueName('exec-3-again'));
    expect(again.status).toBe('SUCCEEDED');
    expect(again.visited).toEqual(['AcquireLock', 'WasItDone', 'AlreadyDone']);
    expect(calls).toEqual(['acquire']);
    expect(again.output).toMatchObject({ status: 'completed', result: { done: true }, owner: first, fencingToken: done.output.lock.fencingToken });
    expect(again.output).not.toHaveProperty('leaseToken');
    expect(await heldBy('moto-job-3')).toEqual([]);
  });

  it('a failing work step still releases, recording the job as failed, then fails with the work error (JobFailed, ErrorPath)', async () => {
    work = async () => {
      throw Object.assign(new Error('disk full'), { name: 'WorkCrashed' });
    };
    const run = await execute({ jobId: 'j2', ids: ['moto-job-2'] }, uniqueName('exec-2'));
    expect(run).toMatchObject({ status: 'FAILED', error: 'WorkCrashed' });
    expect(run.visited).toEqual(['AcquireLock', 'WasItDone', 'Locked', 'DoWork', 'ReleaseAfterFailure', 'JobFailed']);
    expect(calls).toEqual(['acquire', 'work', 'release']);
    expect(await heldBy('moto-job-2')).toEqual([]);
    // Recorded as failed: the next execution with this jobId runs the job at once.
    work = async () => ({ done: true });
    const rerun = await execute({ jobId: 'j2', ids: ['moto-job-2'] }, uniqueName('exec-2-again'));
    expect(rerun.status).toBe('SUCCEEDED');
    expect(calls).toEqual(['acquire', 'work', 'release']);
  });
});
