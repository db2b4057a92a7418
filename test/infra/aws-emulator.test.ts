/**
 * What the project's AWS emulator (moto 5.2.5 in server mode, infra/aws/) really serves, asked
 * through the real AWS SDK v3 clients: SQS queues, EventBridge rules with SQS targets, and Step
 * Functions executions whose `.waitForTaskToken` tasks wait for SendTaskSuccess/SendTaskFailure.
 * Where moto answers differently from AWS, the test says so (docs/aws-emulator.md lists them).
 */
import { CreateEventBusCommand, PutEventsCommand, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import {
  CreateStateMachineCommand,
  DescribeExecutionCommand,
  type ExecutionStatus,
  GetExecutionHistoryCommand,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import { CreateQueueCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../infra/lib/wait.js';
import { type AwsClients, awsClients, awsEmulatorUrl, EMULATOR_ACCOUNT_ID, emulatorRoleArn, uniqueName } from '../support/aws.js';

let aws: AwsClients;

beforeAll(async () => {
  aws = awsClients(await awsEmulatorUrl());
});

afterAll(() => aws?.destroy());

async function createQueue(prefix: string, attributes: Record<string, string> = {}): Promise<{ url: string; arn: string }> {
  // A FIFO queue's name must end in .fifo (InvalidParameterValue otherwise), as on AWS.
  const name = `${uniqueName(prefix)}${attributes.FifoQueue === 'true' ? '.fifo' : ''}`;
  const { QueueUrl } = await aws.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  const { Attributes } = await aws.sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}

/** Every message that arrives within `waitSeconds` (deleted as they are taken). */
async function drain(queueUrl: string, waitSeconds = 1): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const { Messages = [] } = await aws.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: waitSeconds }));
    if (Messages.length === 0) return bodies;
    for (const message of Messages) {
      bodies.push(message.Body!);
      await aws.sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle! }));
    }
  }
}

/** The next message's body as JSON (waits up to 5 s). */
async function nextMessage(queueUrl: string): Promise<Record<string, unknown>> {
  const { Messages = [] } = await aws.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 5 }));
  expect(Messages, 'a message within 5 s').toHaveLength(1);
  await aws.sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: Messages[0]!.ReceiptHandle! }));
  return JSON.parse(Messages[0]!.Body!) as Record<string, unknown>;
}

/** The SDK error's name (what `error.name` is in a catch), or 'no error'. */
async function errorName(request: Promise<unknown>): Promise<string> {
  try {
    await request;
    return 'no error';
  } catch (error) {
    return (error as Error).name;
  }
}

describe('SQS', () => {
  it('a standard queue takes a message, hands it out, and no longer has it once it is deleted', async () => {
    const queue = await createQueue('standard');
    expect(queue.url).toMatch(new RegExp(`/${EMULATOR_ACCOUNT_ID}/standard-`));
    expect(queue.arn).toMatch(new RegExp(`^arn:aws:sqs:us-east-1:${EMULATOR_ACCOUNT_ID}:standard-`));
    await aws.sqs.send(
      new SendMessageCommand({ QueueUrl: queue.url, MessageBody: 'wake up', MessageAttributes: { lock: { DataType: 'String', StringValue: 'a' } } }),
    );

    const { Messages = [] } = await aws.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queue.url, WaitTimeSeconds: 1, MessageAttributeNames: ['All'], VisibilityTimeout: 0 }),
    );
    expect(Messages).toHaveLength(1);
    expect(Messages[0]!.Body).toBe('wake up');
    expect(Messages[0]!.MessageAttributes?.lock?.StringValue).toBe('a');

    await aws.sqs.send(new DeleteMessageCommand({ QueueUrl: queue.url, ReceiptHandle: Messages[0]!.ReceiptHandle! }));
    expect(await drain(queue.url, 0)).toEqual([]);
  });

  it('a FIFO queue keeps one message per deduplication id, in order', async () => {
    const queue = await createQueue('ordered', { FifoQueue: 'true' });
    const send = (body: string, dedup: string) =>
      aws.sqs.send(new SendMessageCommand({ QueueUrl: `${queue.url}`, MessageBody: body, MessageGroupId: 'lock-a', MessageDeduplicationId: dedup }));
    await send('first', 'release-1');
    // Accepted, with a MessageId of its own, and then dropped.
    expect((await send('first, sent again', 'release-1')).MessageId).toEqual(expect.any(String));
    await send('second', 'release-2');

    expect(await drain(queue.url, 0)).toEqual(['first', 'second']);
  });
});

describe('EventBridge', () => {
  it('a rule on a custom bus delivers the events its pattern matches to an SQS target, and only those', async () => {
    const queue = await createQueue('wakeups');
    const bus = uniqueName('locks');
    await aws.eventBridge.send(new CreateEventBusCommand({ Name: bus }));
    const rule = uniqueName('released');
    await aws.eventBridge.send(
      new PutRuleCommand({ Name: rule, EventBusName: bus, EventPattern: JSON.stringify({ source: ['es-lease-locks'], 'detail-type': ['LockReleased'] }) }),
    );
    await aws.eventBridge.send(new PutTargetsCommand({ Rule: rule, EventBusName: bus, Targets: [{ Id: 'waiters', Arn: queue.arn }] }));

    const put = await aws.eventBridge.send(
      new PutEventsCommand({
        Entries: [
          { EventBusName: bus, Source: 'es-lease-locks', DetailType: 'LockReleased', Detail: JSON.stringify({ key: 'jobs/a' }) },
          { EventBusName: bus, Source: 'es-lease-locks', DetailType: 'LockAcquired', Detail: JSON.stringify({ key: 'jobs/b' }) },
          { EventBusName: bus, Source: 'someone-else', DetailType: 'LockReleased', Detail: JSON.stringify({ key: 'jobs/c' }) },
        ],
      }),
    );
    expect(put.FailedEntryCount).toBe(0);

    const delivered = (await drain(queue.url)).map((body) => JSON.parse(body) as Record<string, unknown>);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({
      id: put.Entries![0]!.EventId,
      source: 'es-lease-locks',
      'detail-type': 'LockReleased',
      region: 'us-east-1',
      detail: { key: 'jobs/a' },
    });
  });
});

describe('Step Functions (moto interprets the ASL: execute_state_machine is set when the project starts it)', () => {
  let queueUrl: string;

  beforeAll(async () => {
    queueUrl = (await createQueue('tasks')).url;
  });

  /** A Task that sends {TaskToken, state, input} to the tasks queue and waits for the token to come back. */
  const waitingTask = (fields: Record<string, unknown>) => ({
    Type: 'Task',
    Resource: 'arn:aws:states:::sqs:sendMessage.waitForTaskToken',
    Parameters: { QueueUrl: queueUrl, MessageBody: { 'TaskToken.$': '$$.Task.Token', 'state.$': '$$.State.Name', 'input.$': '$' } },
    ...fields,
  });

  async function createMachine(states: Record<string, unknown>, startAt = Object.keys(states)[0]!): Promise<string> {
    const { stateMachineArn } = await aws.sfn.send(
      new CreateStateMachineCommand({
        name: uniqueName('machine'),
        roleArn: emulatorRoleArn(),
        definition: JSON.stringify({ StartAt: startAt, States: states }),
      }),
    );
    return stateMachineArn!;
  }

  async function start(stateMachineArn: string, input: unknown): Promise<string> {
    const { executionArn } = await aws.sfn.send(new StartExecutionCommand({ stateMachineArn, name: uniqueName('run'), input: JSON.stringify(input) }));
    return executionArn!;
  }

  async function settled(executionArn: string, timeoutMs = 10_000) {
    let status: ExecutionStatus | undefined;
    const outcome = await waitUntil(
      async () => {
        status = (await aws.sfn.send(new DescribeExecutionCommand({ executionArn }))).status;
        return status !== 'RUNNING' || 'still RUNNING';
      },
      { timeoutMs, intervalMs: 100 },
    );
    expect(outcome.ready, `execution settled within ${timeoutMs} ms (last status ${status})`).toBe(true);
    return aws.sfn.send(new DescribeExecutionCommand({ executionArn }));
  }

  const historyTypes = async (executionArn: string): Promise<string[]> =>
    ((await aws.sfn.send(new GetExecutionHistoryCommand({ executionArn }))).events ?? []).map((event) => event.type!);

  it('a sqs:sendMessage.waitForTaskToken task puts its token in the message, and SendTaskSuccess resumes the execution with the output', async () => {
    const machine = await createMachine({ Wait: waitingTask({ ResultPath: '$.answer', End: true }) });
    const run = await start(machine, { jobId: 'job-1' });

    const message = await nextMessage(queueUrl);
    expect(message).toMatchObject({ state: 'Wait', input: { jobId: 'job-1' } });
    expect(message.TaskToken).toEqual(expect.any(String));
    expect((await aws.sfn.send(new DescribeExecutionCommand({ executionArn: run }))).status).toBe('RUNNING');

    await aws.sfn.send(new SendTaskSuccessCommand({ taskToken: message.TaskToken as string, output: JSON.stringify({ done: true }) }));
    const done = await settled(run);
    expect(done.status).toBe('SUCCEEDED');
    expect(JSON.parse(done.output!)).toEqual({ jobId: 'job-1', answer: { done: true } });
    expect(await historyTypes(run)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'TaskScheduled',
      'TaskStarted',
      'TaskSubmitted',
      'TaskSucceeded',
      'TaskStateExited',
      'ExecutionSucceeded',
    ]);
  });

  it('SendTaskFailure fails the task with its error, which Catch matches by name; moto drops the cause', async () => {
    const machine = await createMachine({
      Wait: waitingTask({ Catch: [{ ErrorEquals: ['LockHeldError'], ResultPath: '$.error', Next: 'Busy' }], End: true }),
      Busy: { Type: 'Pass', End: true },
    });
    const caught = await start(machine, {});
    await aws.sfn.send(
      new SendTaskFailureCommand({ taskToken: (await nextMessage(queueUrl)).TaskToken as string, error: 'LockHeldError', cause: 'held by b' }),
    );
    const done = await settled(caught);
    expect(done.status).toBe('SUCCEEDED');
    // AWS would give Cause: 'held by b': moto's SendTaskFailure handler passes the error only.
    expect(JSON.parse(done.output!)).toEqual({ error: { Error: 'LockHeldError', Cause: null } });

    const uncaught = await start(machine, {});
    await aws.sfn.send(
      new SendTaskFailureCommand({ taskToken: (await nextMessage(queueUrl)).TaskToken as string, error: 'StoreUnavailableError', cause: 'down' }),
    );
    const failed = await settled(uncaught);
    expect(failed.status).toBe('FAILED');
    expect(failed.error).toBe('StoreUnavailableError');
    expect(failed.cause).toBeUndefined();
  });

  it('a task past its TimeoutSeconds fails with States.Timeout; its token then answers InvalidToken to SendTaskSuccess, and nothing to SendTaskFailure', async () => {
    const machine = await createMachine({ Wait: waitingTask({ TimeoutSeconds: 1, End: true }) });
    const run = await start(machine, {});
    const token = (await nextMessage(queueUrl)).TaskToken as string;

    const done = await settled(run);
    expect(done.status).toBe('FAILED');
    expect(done.error).toBe('States.Timeout');
    expect(await historyTypes(run)).toContain('TaskTimedOut');
    // AWS answers TaskTimedOut to both. moto's SendTaskSuccess looks the token up among RUNNING
    // executions only; its SendTaskFailure among all of them, where the old token is still known.
    expect(await errorName(aws.sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })))).toBe('InvalidToken');
    expect(await errorName(aws.sfn.send(new SendTaskFailureCommand({ taskToken: token, error: 'Late' })))).toBe('no error');
    expect((await aws.sfn.send(new DescribeExecutionCommand({ executionArn: run }))).error).toBe('States.Timeout');
  });

  it('a token already answered answers InvalidToken to a second SendTaskSuccess once the execution has ended, and so does a token never issued', async () => {
    const machine = await createMachine({ Wait: waitingTask({ End: true }) });
    const run = await start(machine, {});
    const token = (await nextMessage(queueUrl)).TaskToken as string;
    await aws.sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{"first":true}' }));
    expect((await settled(run)).output).toBe('{"first": true}');

    expect(await errorName(aws.sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{"second":true}' })))).toBe('InvalidToken');
    expect(await errorName(aws.sfn.send(new SendTaskSuccessCommand({ taskToken: 'never-issued', output: '{}' })))).toBe('InvalidToken');
  });

  it('while its execution goes on, a token already answered or timed out is accepted without error and changes nothing (AWS: TaskTimedOut)', async () => {
    const machine = await createMachine({
      First: waitingTask({ TimeoutSeconds: 1, Catch: [{ ErrorEquals: ['States.Timeout'], ResultPath: '$.timedOut', Next: 'Second' }], Next: 'Second' }),
      Second: waitingTask({ ResultPath: '$.second', Next: 'Third' }),
      Third: waitingTask({ ResultPath: '$.third', End: true }),
    });
    const run = await start(machine, {});
    const first = (await nextMessage(queueUrl)).TaskToken as string;
    const second = await nextMessage(queueUrl); // First timed out after 1 s
    expect(second.state).toBe('Second');
    expect(await errorName(aws.sfn.send(new SendTaskSuccessCommand({ taskToken: first, output: '{}' })))).toBe('no error');

    await aws.sfn.send(new SendTaskSuccessCommand({ taskToken: second.TaskToken as string, output: '"ok"' }));
    const third = await nextMessage(queueUrl);
    expect(third.state).toBe('Third');
    expect(await errorName(aws.sfn.send(new SendTaskSuccessCommand({ taskToken: second.TaskToken as string, output: '"again"' })))).toBe('no error');
    expect(await errorName(aws.sfn.send(new SendTaskFailureCommand({ taskToken: second.TaskToken as string, error: 'Again' })))).toBe('no error');
    expect((await aws.sfn.send(new DescribeExecutionCommand({ executionArn: run }))).status).toBe('RUNNING');

    await aws.sfn.send(new SendTaskSuccessCommand({ taskToken: third.TaskToken as string, output: '"done"' }));
    const done = await settled(run);
    expect(done.status).toBe('SUCCEEDED');
    expect(JSON.parse(done.output!)).toMatchObject({ timedOut: { Error: 'States.Timeout' }, second: 'ok', third: 'done' });
  });

  it('SendTaskHeartbeat keeps a task with HeartbeatSeconds alive; without heartbeats it fails with States.Timeout (AWS: States.HeartbeatTimeout)', async () => {
    const machine = await createMachine({ Wait: waitingTask({ HeartbeatSeconds: 2, TimeoutSeconds: 60, End: true }) });
    const kept = await start(machine, {});
    const token = (await nextMessage(queueUrl)).TaskToken as string;
    for (let beat = 0; beat < 3; beat++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await aws.sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));
    }
    await aws.sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' }));
    expect((await settled(kept)).status).toBe('SUCCEEDED');

    const forgotten = await start(machine, {});
    const late = (await nextMessage(queueUrl)).TaskToken as string;
    const done = await settled(forgotten);
    expect(done.status).toBe('FAILED');
    expect(done.error).toBe('States.Timeout');
    expect(await errorName(aws.sfn.send(new SendTaskHeartbeatCommand({ taskToken: late })))).toBe('InvalidToken');
  });

  it('a Retry reuses the task token, and every attempt takes the answer already given (AWS: a token per attempt): one SendTaskFailure fails them all', async () => {
    const machine = await createMachine({
      Flaky: waitingTask({ Retry: [{ ErrorEquals: ['Busy'], IntervalSeconds: 1, MaxAttempts: 2, BackoffRate: 1 }], End: true }),
    });
    const run = await start(machine, {});
    const first = await nextMessage(queueUrl);
    await aws.sfn.send(new SendTaskFailureCommand({ taskToken: first.TaskToken as string, error: 'Busy' }));

    const done = await settled(run);
    expect(done.status).toBe('FAILED');
    expect(done.error).toBe('Busy');
    // Both retries sent their message, with the first attempt's token, and failed before anyone answered.
    expect((await drain(queueUrl)).map((body) => JSON.parse(body).TaskToken)).toEqual([first.TaskToken, first.TaskToken]);
    expect((await historyTypes(run)).filter((type) => type === 'TaskFailed')).toHaveLength(3);
  });

  it('StartExecution needs a name: without one, moto names every execution "None" and refuses the second as ExecutionAlreadyExists', async () => {
    const machine = await createMachine({ Done: { Type: 'Succeed' } });
    await aws.sfn.send(new StartExecutionCommand({ stateMachineArn: machine, input: '{}' }));
    expect(await errorName(aws.sfn.send(new StartExecutionCommand({ stateMachineArn: machine, input: '{}' })))).toBe('ExecutionAlreadyExists');
  });
});
