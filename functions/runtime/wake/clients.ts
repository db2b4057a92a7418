/**
 * The SDK clients the channels use, each loaded and built on its first use and then kept for the
 * container: a function that never wakes a Step Functions task never loads that client (cold starts).
 * Endpoints come from the SDK's own configuration (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SFN ...), which
 * is how tests point them at an emulator.
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { SFNClient } from '@aws-sdk/client-sfn';
import type { SQSClient } from '@aws-sdk/client-sqs';

export interface WakeClients {
  sfn(): Promise<SFNClient>;
  sqs(): Promise<SQSClient>;
  eventBridge(): Promise<EventBridgeClient>;
}

/**
 * A wake-up runs inside a lock call, under its function timeout: a service that does not answer
 * fails the delivery quickly, and the sweeper delivers it again, rather than the call timing out.
 */
const CLIENT_CONFIG = { requestHandler: { connectionTimeout: 1_000, requestTimeout: 3_000 } };

/** A promise made once; forgotten if it fails, so that the next wake-up tries again. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make().catch((error: unknown) => {
      made = undefined;
      throw error;
    });
    return made;
  };
}

export function lazyClients(): WakeClients {
  return {
    sfn: once(async () => new (await import('@aws-sdk/client-sfn')).SFNClient(CLIENT_CONFIG)),
    sqs: once(async () => new (await import('@aws-sdk/client-sqs')).SQSClient(CLIENT_CONFIG)),
    eventBridge: once(async () => new (await import('@aws-sdk/client-eventbridge')).EventBridgeClient(CLIENT_CONFIG)),
  };
}
