/**
 * The AWS WakeNotifier (packages/engine/src/wake.ts): Step Functions task tokens, SQS queues and
 * EventBridge buses. Any failure but "nobody waits there" throws a WakeDeliveryError, which the engine
 * delivers again later; each one is counted in the `WakeDeliveryFailures` metric (the alarm's) and logged.
 */

import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { WakeChannel, WakeDelivery, WakeMessage, WakeNotifier } from '../../../packages/engine/src/wake.js';
import { wakeBody } from './body.js';
import { lazyClients, type WakeClients } from './clients.js';
import { serviceErrorName, WakeDeliveryError } from './errors.js';
import { wakeEvent } from './event.js';
import { wakeQueue } from './queue.js';
import { wakeTask } from './task.js';

export const WAKE_FAILURE_METRIC = 'WakeDeliveryFailures';

export interface WakeNotifierOptions {
  /** The SDK clients (default: each built on first use, once per container). */
  clients?: WakeClients;
  metrics?: Metrics;
  logger?: Logger;
}

export function createWakeNotifier(options: WakeNotifierOptions = {}): WakeNotifier {
  const clients = options.clients ?? lazyClients();

  const deliver = async (channel: WakeChannel, message: WakeMessage): Promise<WakeDelivery> => {
    const body = wakeBody(message);
    switch (channel.kind) {
      case 'task':
        return wakeTask(await clients.sfn(), channel.taskToken, body);
      case 'queue':
        return wakeQueue(await clients.sqs(), channel.queueUrl, body);
      case 'event':
        return wakeEvent(await clients.eventBridge(), channel.eventBusName, body);
    }
  };

  const failed = (channel: WakeChannel, message: WakeMessage, error: unknown): WakeDeliveryError => {
    const failure =
      error instanceof WakeDeliveryError
        ? error
        : new WakeDeliveryError(channel.kind, `${serviceErrorName(error) ?? 'Error'}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    // Its own EMF record with the service dimension alone: the alarm watches one metric, whatever call it happened in.
    if (options.metrics) {
      const single = options.metrics.singleMetric();
      single.addMetadata('channel', channel.kind);
      single.addMetric(WAKE_FAILURE_METRIC, MetricUnit.Count, 1);
    }
    // The ticket says which waiter; the channel's address (a task token is a credential) stays out of the logs.
    options.logger?.warn('wake-up not delivered; delivered again later', {
      channel: channel.kind,
      ticket: message.ticket,
      outcome: message.outcome,
      cause: failure,
    });
    return failure;
  };

  return {
    async notify(channel, message) {
      try {
        return await deliver(channel, message);
      } catch (error) {
        throw failed(channel, message, error);
      }
    },
  };
}
