/** The wake-up channels' one error: the message may not have reached the waiter, so it is delivered again later. */
import { LOCAL_ERRORS } from '../../../packages/client/src/wire.js';
import type { WakeChannel } from '../../../packages/engine/src/wake.js';

export class WakeDeliveryError extends Error {
  override readonly name = 'WakeDeliveryError';
  /** The catalogue's word (LOCAL_ERRORS: an error that never crosses the wire). */
  readonly retryable = LOCAL_ERRORS.WakeDeliveryError.retryable;
  constructor(
    readonly channel: WakeChannel['kind'],
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`Wake-up by ${channel} not delivered: ${detail}`, options);
  }
}

/** The service's name for an SDK error (`TaskTimedOut`, `QueueDoesNotExist`): compared by name, since an SDK copy of another bundle has other classes. */
export const serviceErrorName = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && typeof (error as { name?: unknown }).name === 'string' ? (error as { name: string }).name : undefined;
