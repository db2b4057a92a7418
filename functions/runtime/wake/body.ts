/** What a waiter reads, on every channel: the outcome, its ticket, and the grant as every reply shows one. */
import type { WakeMessage } from '../../core/wake.js';
import { type GrantBody, presentGrant } from '../present.js';

export type WakeBody = ({ status: 'granted'; ticket: string } & GrantBody) | { status: 'failed'; ticket: string; error: string; message: string };

export function wakeBody(message: WakeMessage): WakeBody {
  if (message.outcome === 'granted') return { status: 'granted', ticket: message.ticket, ...presentGrant(message.grant) };
  return { status: 'failed', ticket: message.ticket, error: message.error, message: message.message };
}
