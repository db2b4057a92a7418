/**
 * The AWS WakeNotifier against a real AWS emulator (moto's server) through the SDK v3 clients: SQS
 * message bodies (standard and FIFO), an EventBridge event routed by a rule to an SQS queue, and Step
 * Functions tasks waiting with `.waitForTaskToken` that the notifier completes, fails, or finds gone.
 * The notifier finds the emulator only as a deployed function finds AWS: through the SDK's endpoint
 * configuration (AWS_ENDPOINT_URL), never through an endpoint given in code. No emulator at
 * AWS_EMULATOR_URL fails every test here, naming it: nothing is skipped.
 */
import { randomBytes } from 'node:crypto';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { CreateEventBusCommand, EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateStateMachineCommand, DescribeExecutionCommand, SendTaskSuccessCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { CreateQueueCommand, GetQueueAttributesCommand, type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createWakeNotifier, WakeDeliveryError } from '../../functions/runtime/wake/index.js';
import type { WakeMessage } from '../../packages/engine/src/wake.js';
import { awsEmulatorUrl } from '../support/aws.js';

// The project's emulator (infra/aws/), started on demand, or the one AWS_EMULATOR_URL names.
const EMULATOR = await awsEmulatorUrl();
const REGION = 'eu-west-1';

// What the SDK reads when it builds the notifier's clients (on their first use, after this).
for (const name of Object.keys(process.env))
  if (name.startsWith('AWS_ENDPOINT_URL_') || name === 'AWS_PROFILE' || name === 'AWS_SESSION_TOKEN') delete process.env[name];
delete process.env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS;
Object.assign(process.env, {
  AWS_ENDPOINT_URL: EMULATOR,
  AWS_REGION: REGION,
  AWS_ACCESS_KEY_ID: 'testing',
  AWS_SECRET_ACCESS_KEY: 'testing',
  AWS_CONFIG_FILE: '/nonexistent',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
});

// The test's own clients, to set the scene and look at the outcome: the endpoint given explicitly.
const setup = { endpoint: EMULATOR, region: REGION, credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' } };
const sqs = new SQSClient(setup);
const events = new EventBridgeClient(setup);

const run = randomBytes(4).toString('hex');
const named = (what: string) => `wake-${what}-${run}`;

beforeAll(async () => {
  // moto runs state machines only when asked to (otherwise an execution stays RUNNING, touching nothing).
  const answer = await fetch(new URL('/moto-api/config', EMULATOR), {
    method: 'POST',
    body: JSON.stringify({ stepfunctions: { execute_state_machine: true } }),
  }).catch((error: unknown) => {
    throw new Error(
      `No AWS emulator answers at ${EMULATOR} (${(error as Error).message}): start one (python3 -m moto.server -p 5005) or set AWS_EMULATOR_URL to its URL`,
    );
  });
  if (!answer.ok) throw new Error(`The AWS emulator at ${EMULATOR} refused to run state machines (POST /moto-api/config: ${answer.status}); is it moto?`);
});

const reservedUntil = Date.parse('2030-01-01T00:00:30.000Z');
const ready = (ticket: string): WakeMessage => ({
  outcome: 'ready',
  ticket,
  reservedUntil,
  target: { namespace: 'orders', granularity: 'document', ids: ['o-1'] },
  mode: 'exclusive',
  owner: 'worker-1',
  requestId: 'req-1',
});
const failed = (ticket: string): WakeMessage => ({ outcome: 'failed', ticket, error: 'LockWaitExpiredError', message: 'The wait for orders/o-1 ran out' });
/** What a waiter reads: everything it needs to claim (the same acquire again, without wake), and no lease: a wake-up is never a grant. */
const readyBody = (ticket: string) => ({
  status: 'ready',
  ticket,
  reservedUntilMs: reservedUntil,
  namespace: 'orders',
  granularity: 'document',
  ids: ['o-1'],
  mode: 'exclusive',
  owner: 'worker-1',
  requestId: 'req-1',
});

const notifier = createWakeNotifier();

async function createQueue(name: string): Promise<{ url: string; arn: string }> {
  const fifo = name.endsWith('.fifo') ? { FifoQueue: 'true' } : {};
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { ...fifo } }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}

/** The queue's messages, waiting up to `seconds` for the first. */
async function receive(queueUrl: string, seconds = 5): Promise<Message[]> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageSystemAttributeNames: ['All'] }),
    );
    if (Messages.length > 0 || Date.now() > deadline) return Messages;
  }
}

describe('wake-ups by SQS queue', () => {
  it('sends the ready body (what the waiter claims with, no lease) and the failed body to a standard queue', async () => {
    const queue = await createQueue(named('standard'));
    await expect(notifier.notify({ kind: 'queue', queueUrl: queue.url }, ready('t-std'))).resolves.toBe('delivered');
    await expect(notifier.notify({ kind: 'queue', queueUrl: queue.url }, failed('t-std-2'))).resolves.toBe('delivered');
    const bodies = (await receive(queue.url)).map((message) => JSON.parse(message.Body!));
    expect(bodies).toEqual(
      expect.arrayContaining([
        readyBody('t-std'),
        { status: 'failed', ticket: 't-std-2', error: 'LockWaitExpiredError', message: 'The wait for orders/o-1 ran out' },
      ]),
    );
    expect(bodies).toHaveLength(2);
  });

  it('gives a FIFO queue the ticket as group and deduplication id: the same outcome sent again arrives once', async () => {
    const queue = await createQueue(`${named('ordered')}.fifo`);
    for (let i = 0; i < 2; i++) await expect(notifier.notify({ kind: 'queue', queueUrl: queue.url }, ready('t-fifo'))).resolves.toBe('delivered');
    const messages = await receive(queue.url);
    expect(messages).toHaveLength(1);
    expect(JSON.parse(messages[0]!.Body!)).toEqual(readyBody('t-fifo'));
    expect(messages[0]!.Attributes).toMatchObject({ MessageGroupId: 't-fifo', MessageDeduplicationId: 't-fifo' });
  });

  it('throws a retryable WakeDeliveryError for a queue that does not exist (a wrong URL must show, not lose the wake-up quietly)', async () => {
    const missing = `${EMULATOR}/123456789012/${named('missing')}`;
    const error = await notifier.notify({ kind: 'queue', queueUrl: missing }, ready('t-missing')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WakeDeliveryError);
    expect(error).toMatchObject({ channel: 'queue', retryable: true });
    expect((error as Error).message).toMatch(/QueueDoesNotExist|NonExistentQueue/);
  });
});

describe('wake-ups by EventBridge event', () => {
  it('puts one event on the bus, source es-lease-locks, detail-type by outcome; a rule routes it to its target', async () => {
    const bus = named('bus');
    await events.send(new CreateEventBusCommand({ Name: bus }));
    const target = await createQueue(named('events'));
    await events.send(new PutRuleCommand({ Name: named('rule'), EventBusName: bus, EventPattern: JSON.stringify({ source: ['es-lease-locks'] }) }));
    await events.send(new PutTargetsCommand({ Rule: named('rule'), EventBusName: bus, Targets: [{ Id: 'waiter', Arn: target.arn }] }));

    await expect(notifier.notify({ kind: 'event', eventBusName: bus }, ready('t-event'))).resolves.toBe('delivered');
    await expect(notifier.notify({ kind: 'event', eventBusName: bus }, failed('t-event-2'))).resolves.toBe('delivered');
    const delivered = (await receive(target.url)).map((message) => JSON.parse(message.Body!));
    expect(delivered.map(({ source, 'detail-type': type, detail }) => ({ source, type, detail }))).toEqual(
      expect.arrayContaining([
        { source: 'es-lease-locks', type: 'Lock ready to claim', detail: readyBody('t-event') },
        {
          source: 'es-lease-locks',
          type: 'Lock wait failed',
          detail: { status: 'failed', ticket: 't-event-2', error: 'LockWaitExpiredError', message: 'The wait for orders/o-1 ran out' },
        },
      ]),
    );
  });

  it('throws a retryable WakeDeliveryError when the bus refuses the event', async () => {
    const error = await notifier.notify({ kind: 'event', eventBusName: named('no-such-bus') }, ready('t-nobus')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WakeDeliveryError);
    expect(error).toMatchObject({ channel: 'event', retryable: true });
  });
});

describe('wake-ups of Step Functions tasks (.waitForTaskToken)', () => {
  const ROLE = 'arn:aws:iam::123456789012:role/wake-test';
  let tokens: { url: string };

  beforeAll(async () => {
    // Where the state machines put their tokens: moto's own SQS calls land in its default account.
    tokens = await createQueue(named('tokens'));
  });

  /**
   * A Step Functions client, the test's or the notifier's (its endpoint from the environment, as the
   * notifier's own), in an account of its own: moto 5.2.1 copies the whole account's Step Functions
   * state on each StartExecution, and an earlier execution's worker thread in it makes that copy fail,
   * so each execution gets a fresh account (moto's `x-moto-account-id` header). `sent` keeps what the
   * client asked for (action and JSON body), where moto keeps less than AWS.
   */
  function sfnIn(account: string, config: { endpoint?: string } = {}, sent: Array<{ action: string; body: Record<string, unknown> }> = []): SFNClient {
    const client = new SFNClient({ ...config, region: REGION });
    client.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { headers: Record<string, string>; body: string | Uint8Array };
        request.headers['x-moto-account-id'] = account;
        sent.push({
          action: request.headers['x-amz-target']!.replace(/^AWSStepFunctions\./, ''),
          body: JSON.parse(Buffer.from(request.body).toString('utf8')),
        });
        return next(args);
      },
      { step: 'build', name: 'motoAccount' },
    );
    return client;
  }

  /** A state machine whose one task sends its token to the tokens queue and waits for it, started; with a notifier that reaches it. */
  async function waitingExecution(timeoutSeconds: number) {
    const account = String(100_000_000_000 + Math.floor(Math.random() * 899_999_999_999));
    const sfn = sfnIn(account, { endpoint: EMULATOR });
    const name = named(`wait-${randomBytes(3).toString('hex')}`);
    const definition = {
      StartAt: 'WaitForLock',
      States: {
        WaitForLock: {
          Type: 'Task',
          Resource: 'arn:aws:states:::sqs:sendMessage.waitForTaskToken',
          Parameters: { QueueUrl: tokens.url, MessageBody: { 'execution.$': '$$.Execution.Name', 'taskToken.$': '$$.Task.Token' } },
          TimeoutSeconds: timeoutSeconds,
          End: true,
        },
      },
    };
    const { stateMachineArn } = await sfn.send(new CreateStateMachineCommand({ name, roleArn: ROLE, definition: JSON.stringify(definition) }));
    const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn, name, input: '{}' }));
    const sent: Array<{ action: string; body: Record<string, unknown> }> = [];
    const notifier = createWakeNotifier({ clients: { sfn: async () => sfnIn(account, {}, sent), sqs: async () => sqs, eventBridge: async () => events } });
    const finished = async () => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
        if (execution.status !== 'RUNNING' || Date.now() > deadline) return execution;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    // What Step Functions itself answers for the token (the notifier turns some answers into `gone`).
    const sendSuccess = () =>
      sfn.send(new SendTaskSuccessCommand({ taskToken, output: '{}' })).then(
        () => 'accepted',
        (error: Error) => error.name,
      );
    // Other executions share the queue: keep looking until this one's token shows (others' come back later).
    let taskToken: string | undefined;
    const deadline = Date.now() + 10_000;
    while (!taskToken && Date.now() < deadline) {
      for (const message of await receive(tokens.url, 1)) {
        const body = JSON.parse(message.Body!) as { execution: string; taskToken: string };
        if (body.execution === name) taskToken = body.taskToken;
      }
    }
    if (!taskToken) throw new Error(`execution ${name} sent no task token within 10 s`);
    return { taskToken, notifier, finished, sendSuccess, sent };
  }

  it('a ready ticket completes the task: the execution succeeds with the ready body (no lease) as its output', async () => {
    const { taskToken, notifier, finished } = await waitingExecution(60);
    await expect(notifier.notify({ kind: 'task', taskToken }, ready('t-task'))).resolves.toBe('delivered');
    const execution = await finished();
    expect(execution.status).toBe('SUCCEEDED');
    expect(JSON.parse(execution.output!)).toEqual(readyBody('t-task'));
  });

  it("a failed wait fails the task with the error's name (what a Catch matches) and its message as cause", async () => {
    const { taskToken, notifier, finished, sent } = await waitingExecution(60);
    await expect(notifier.notify({ kind: 'task', taskToken }, failed('t-task-failed'))).resolves.toBe('delivered');
    expect(await finished()).toMatchObject({ status: 'FAILED', error: 'LockWaitExpiredError' });
    // moto drops the cause (neither the execution nor its history has it): what was sent says it.
    expect(sent).toEqual([{ action: 'SendTaskFailure', body: { taskToken, error: 'LockWaitExpiredError', cause: 'The wait for orders/o-1 ran out' } }]);
  });

  it('a task already completed is gone: a second wake-up with its token answers `gone`', async () => {
    const { taskToken, notifier, finished, sendSuccess } = await waitingExecution(60);
    await expect(notifier.notify({ kind: 'task', taskToken }, ready('t-twice'))).resolves.toBe('delivered');
    expect((await finished()).status).toBe('SUCCEEDED');
    // AWS answers TaskTimedOut ("Provided task does not exist anymore"); moto, which looks for the token among running executions only, InvalidToken.
    expect(await sendSuccess()).toBe('InvalidToken');
    await expect(notifier.notify({ kind: 'task', taskToken }, ready('t-twice'))).resolves.toBe('gone');
    // (A failed outcome cannot be checked here: moto 5.2.1 accepts SendTaskFailure for a task that is no longer running.)
  });

  it('a task that timed out is gone: the notifier answers `gone` (and the engine cancels the reservation)', async () => {
    const { taskToken, notifier, finished, sendSuccess } = await waitingExecution(1);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await finished()).toMatchObject({ status: 'FAILED', error: 'States.Timeout' });
    // AWS answers TaskTimedOut; moto models the timeout (the execution fails with States.Timeout) but then answers InvalidToken.
    expect(await sendSuccess()).toBe('InvalidToken');
    await expect(notifier.notify({ kind: 'task', taskToken }, ready('t-late'))).resolves.toBe('gone');
    // (A failed outcome cannot be checked here: moto 5.2.1 accepts SendTaskFailure for a task that is no longer running.)
  });

  it('a token no task ever had is gone', async () => {
    await expect(notifier.notify({ kind: 'task', taskToken: `not-a-token-${run}` }, ready('t-none'))).resolves.toBe('gone');
  });
});

describe('failures are counted', () => {
  afterEach(() => vi.restoreAllMocks());

  it('each delivery that throws emits WakeDeliveryFailures in its own EMF record, with the service dimension alone', async () => {
    const previous = process.env.POWERTOOLS_METRICS_DISABLED;
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    const lines: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string | Uint8Array) => {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      return true;
    }) as typeof process.stdout.write);
    try {
      const metrics = new Metrics({ namespace: 'EsLeaseLocks', serviceName: 'es-lease-locks' });
      metrics.addDimension('operation', 'release');
      const counted = createWakeNotifier({ metrics });
      await expect(counted.notify({ kind: 'event', eventBusName: named('no-such-bus') }, ready('t-count'))).rejects.toThrow(WakeDeliveryError);
      await expect(counted.notify({ kind: 'task', taskToken: `not-a-token-${run}` }, ready('t-gone'))).resolves.toBe('gone');
    } finally {
      vi.restoreAllMocks();
      if (previous === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
      else process.env.POWERTOOLS_METRICS_DISABLED = previous;
    }
    const records = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, any>);
    const failures = records.filter((record) => 'WakeDeliveryFailures' in record);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ WakeDeliveryFailures: 1, channel: 'event', service: 'es-lease-locks' });
    expect(failures[0]!._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: 'EsLeaseLocks', Dimensions: [['service']] });
  });
});
