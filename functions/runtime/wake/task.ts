/** Channel `task`: completes a Step Functions task that waits with `.waitForTaskToken`. */
import type { SFNClient } from '@aws-sdk/client-sfn';
import type { WakeDelivery } from '../../../packages/engine/src/wake.js';
import type { WakeBody } from './body.js';
import { serviceErrorName } from './errors.js';

/** What Step Functions answers when no task waits for the token any more: it timed out, was completed already, or never was. */
const NOBODY_WAITS = new Set(['TaskTimedOut', 'TaskDoesNotExist', 'InvalidToken']);

export async function wakeTask(client: SFNClient, taskToken: string, body: WakeBody): Promise<WakeDelivery> {
  const { SendTaskFailureCommand, SendTaskSuccessCommand } = await import('@aws-sdk/client-sfn');
  try {
    // A failure is the task's error (what the state machine's Catch matches) and its message, as a direct invocation throws them.
    if (body.status === 'ready') await client.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(body) }));
    else await client.send(new SendTaskFailureCommand({ taskToken, error: body.error, cause: body.message }));
    return 'delivered';
  } catch (error) {
    if (NOBODY_WAITS.has(serviceErrorName(error) ?? '')) return 'gone';
    throw error;
  }
}
