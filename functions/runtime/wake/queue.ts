/** Channel `queue`: one SQS message per outcome, its body the wake-up's JSON. */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { WakeDelivery } from '../../../packages/engine/src/wake.js';
import type { WakeBody } from './body.js';

export async function wakeQueue(client: SQSClient, queueUrl: string, body: WakeBody): Promise<WakeDelivery> {
  const { SendMessageCommand } = await import('@aws-sdk/client-sqs');
  // A FIFO queue wants a group and a deduplication id: the ticket for both, so that an outcome delivered
  // again within the queue's five-minute deduplication window reaches the consumer once.
  const fifo = queueUrl.endsWith('.fifo') ? { MessageGroupId: body.ticket, MessageDeduplicationId: body.ticket } : {};
  await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(body), ...fifo }));
  return 'delivered';
}
