/**
 * Running a state machine whose Tasks call Lambda functions on the AWS emulator, which cannot run
 * Lambda (moto needs Docker for that): `viaTaskTokens` rewrites every `lambda:invoke` Task into an
 * `sqs:sendMessage.waitForTaskToken` Task that sends {TaskToken, FunctionName, Payload} to a queue,
 * and `TaskTokenWorker` plays Lambda: it takes each message, runs the function in-process, and
 * answers SendTaskSuccess with {Payload: result} (what lambda:invoke gives, so ResultSelectors on
 * $.Payload keep working) or SendTaskFailure with the thrown error's name and message.
 *
 * A `lambda:invoke.waitForTaskToken` Task (its Payload carries `$$.Task.Token` itself, e.g. an
 * acquire's `wake.taskToken`) goes the same way, marked `Callback: true`: the worker runs the
 * function and leaves the task to whoever the function hands the token to (the lock functions'
 * notifier, now or at a hand-over); only a function that throws is answered, with SendTaskFailure,
 * as a failed Lambda invocation fails the task. Both kinds share the one task token: the message's
 * `TaskToken` and the one inside the Payload are the same.
 * Retry, Catch, Choice and Fail are moto's own interpreter's, in real time.
 */
import { SendTaskFailureCommand, SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

type Json = any;

export interface RewriteOptions {
  /** Every Retry's IntervalSeconds at most this, BackoffRate 1 (moto waits in real time). */
  maxIntervalSeconds?: number;
}

const CALLBACK = 'arn:aws:states:::lambda:invoke.waitForTaskToken';
const LAMBDA_INVOKE = new Set(['arn:aws:states:::lambda:invoke', CALLBACK]);

/** The definition with each lambda:invoke Task (and lambda:invoke.waitForTaskToken Task) sent through `queueUrl` and answered by task token. */
export function viaTaskTokens(definition: { States: Record<string, Json> }, queueUrl: string, options: RewriteOptions = {}): Json {
  const copy = structuredClone(definition);
  for (const state of Object.values(copy.States)) {
    if (state.Type !== 'Task' || !LAMBDA_INVOKE.has(state.Resource)) continue;
    const callback = state.Resource === CALLBACK;
    state.Resource = 'arn:aws:states:::sqs:sendMessage.waitForTaskToken';
    state.Parameters = { QueueUrl: queueUrl, MessageBody: { 'TaskToken.$': '$$.Task.Token', ...state.Parameters, ...(callback ? { Callback: true } : {}) } };
    if (options.maxIntervalSeconds !== undefined) {
      for (const rule of state.Retry ?? []) {
        rule.IntervalSeconds = Math.min(rule.IntervalSeconds ?? 1, options.maxIntervalSeconds);
        rule.BackoffRate = 1;
        delete rule.MaxDelaySeconds;
      }
    }
  }
  return copy;
}

export type FunctionRunner = (functionName: string, payload: unknown) => Promise<unknown>;

/** Answers the tasks that arrive on `queueUrl` with `run` until stopped. */
export class TaskTokenWorker {
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(
    private readonly clients: { sqs: SQSClient; sfn: SFNClient },
    private readonly queueUrl: string,
    private readonly run: FunctionRunner,
  ) {
    this.loop = this.work();
  }

  private async work(): Promise<void> {
    while (!this.stopped) {
      const { Messages = [] } = await this.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: this.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      for (const message of Messages) {
        await this.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: message.ReceiptHandle! }));
        const { TaskToken, FunctionName, Payload, Callback } = JSON.parse(message.Body!) as {
          TaskToken: string;
          FunctionName: string;
          Payload: unknown;
          Callback?: true;
        };
        let answer: SendTaskSuccessCommand | SendTaskFailureCommand;
        try {
          const result = await this.run(FunctionName, Payload);
          // .waitForTaskToken: the function's answer is not the task's; the token's holder completes it.
          if (Callback) continue;
          answer = new SendTaskSuccessCommand({ taskToken: TaskToken, output: JSON.stringify({ Payload: result }) });
        } catch (error) {
          const { name, message: text } = error as Error;
          answer = new SendTaskFailureCommand({ taskToken: TaskToken, error: name, cause: text });
        }
        await this.clients.sfn.send(answer as SendTaskSuccessCommand);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}
