/**
 * What a waiter reads, on every channel: `ready` (the lock is reserved for its ticket until
 * `reservedUntilMs`: claim it with the same acquire again, without `wake`; the claim's answer is the
 * grant) or `failed`. A wake-up is never a grant.
 */
import type { TargetBody } from '../../../packages/client/src/wire.js';
import { presentTarget } from '../../../packages/engine/src/present.js';
import type { WakeMessage } from '../../../packages/engine/src/wake.js';

export type WakeBody =
  | ({
      status: 'ready';
      ticket: string;
      reservedUntilMs: number;
      mode: string;
      owner: string;
      requestId?: string;
      permits?: { limit: number; count: number };
    } & TargetBody)
  | { status: 'failed'; ticket: string; error: string; message: string };

export function wakeBody(message: WakeMessage): WakeBody {
  if (message.outcome === 'failed') return { status: 'failed', ticket: message.ticket, error: message.error, message: message.message };
  return {
    status: 'ready',
    ticket: message.ticket,
    reservedUntilMs: message.reservedUntil,
    ...presentTarget(message.target),
    mode: message.mode,
    owner: message.owner,
    ...(message.requestId !== undefined ? { requestId: message.requestId } : {}),
    ...(message.permits !== undefined ? { permits: message.permits } : {}),
  };
}
