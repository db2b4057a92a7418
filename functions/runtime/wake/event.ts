/** Channel `event`: one EventBridge event per outcome on the waiter's bus. */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { WakeDelivery } from '../../../packages/engine/src/wake.js';
import type { WakeBody } from './body.js';
import { WakeDeliveryError } from './errors.js';

export const WAKE_EVENT_SOURCE = 'es-lease-locks';
export const WAKE_DETAIL_TYPES = { ready: 'Lock ready to claim', failed: 'Lock wait failed' } as const;

export async function wakeEvent(client: EventBridgeClient, eventBusName: string, body: WakeBody): Promise<WakeDelivery> {
  const { PutEventsCommand } = await import('@aws-sdk/client-eventbridge');
  const answer = await client.send(
    new PutEventsCommand({
      Entries: [{ EventBusName: eventBusName, Source: WAKE_EVENT_SOURCE, DetailType: WAKE_DETAIL_TYPES[body.status], Detail: JSON.stringify(body) }],
    }),
  );
  // PutEvents answers 200 even when it refused the entry: the refusal is in the entry's result.
  if ((answer.FailedEntryCount ?? 0) > 0) {
    const [entry] = answer.Entries ?? [];
    throw new WakeDeliveryError('event', `PutEvents refused the event: ${entry?.ErrorCode ?? 'unknown'} ${entry?.ErrorMessage ?? ''}`.trim());
  }
  return 'delivered';
}
