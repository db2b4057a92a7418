/**
 * Wake-ups for queued waiters: where a waiter that is not in the call (a Step Functions task, a
 * queue consumer, an event rule) learns that its ticket was granted, or that it failed. The engine
 * decides what to say; a WakeNotifier (functions/runtime/wake/ for AWS) says it. The core never
 * imports AWS: a channel is plain data stored with the ticket.
 */
import type { Grant, WakeChannel } from './model.js';

export type { WakeChannel } from './model.js';

export type WakeMessage =
  | { outcome: 'granted'; ticket: string; grant: Grant }
  | {
      outcome: 'failed';
      ticket: string;
      /** An error name of the catalogue (`LockWaitExpiredError`, `LeaseLostError` ...), as a Step Functions `Catch` matches it. */
      error: string;
      message: string;
    };

/**
 * `delivered`: the channel took the message (it may reach the waiter more than once: consumers key on
 * the ticket). `gone`: the channel says nobody waits there any more (a task token that timed out or was
 * already completed); the engine then gives the grant back. Anything else throws, and the outcome is
 * delivered again later (the sweeper).
 */
export type WakeDelivery = 'delivered' | 'gone';

export interface WakeNotifier {
  notify(channel: WakeChannel, message: WakeMessage): Promise<WakeDelivery>;
}
