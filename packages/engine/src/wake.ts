/**
 * Wake-ups for queued waiters: where a waiter that is not in the call (a Step Functions task, a
 * queue consumer, an event rule) learns that the lock is reserved for it (and claims it with the same
 * acquire again, without `wake`: only that claim grants), or that its ticket failed. The engine
 * decides what to say; a WakeNotifier (functions/runtime/wake/ for AWS) says it. The core never
 * imports AWS: a channel is plain data stored with the ticket.
 */
import type { LockTarget, Permits, RequestedMode, WakeChannel } from './model.js';

export type { WakeChannel } from './model.js';

export type WakeMessage =
  | {
      /** The lock is reserved for this ticket until `reservedUntil`: claim it before, with the same acquire (target, mode, owner, requestId) without `wake`. */
      outcome: 'ready';
      ticket: string;
      reservedUntil: number;
      target: LockTarget;
      mode: RequestedMode;
      owner: string;
      requestId?: string;
      /** A semaphore's waiter: the permits to claim with. */
      permits?: Permits;
    }
  | {
      outcome: 'failed';
      ticket: string;
      /** An error name of the catalogue (`LockWaitExpiredError`, `LeaseLostError` ...), as a Step Functions `Catch` matches it. */
      error: string;
      message: string;
    };

/**
 * `delivered`: the channel took the message (it may reach the waiter more than once: a second claim
 * finds the first one's grant). `gone`: the channel says nobody waits there any more (a task token
 * that timed out or was already completed); the engine then cancels the reservation. Anything else
 * throws, and the waiter is woken again later (the sweeper).
 */
export type WakeDelivery = 'delivered' | 'gone';

export interface WakeNotifier {
  notify(channel: WakeChannel, message: WakeMessage): Promise<WakeDelivery>;
}
