/**
 * Error bodies of the HTTP API turned back into the engine's error classes, so that code written
 * against the engine in-process (`catch (e) { if (e instanceof LockHeldError) ... }`) works over HTTP too.
 */
import {
  FencingRangeError,
  type FieldIssue,
  LeaseLostError,
  LeaseTokenMismatchError,
  LockContentionError,
  LockHeldError,
  LockOutcomeUnknownError,
  StoreRejectedError,
  StoreUnavailableError,
  ValidationError,
} from '../core/errors.js';
import type { ConflictingKey as Conflict, ConflictingKey } from '../core/model.js';

/** A status or error name the client does not know (500 InternalError among them). */
export class LockServiceError extends Error {
  override readonly name: string;
  readonly retryable: boolean;
  constructor(
    readonly status: number,
    readonly errorName: string,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = errorName || 'LockServiceError';
    this.retryable = status === 503 || status === 502 || status === 504 || status === 429;
  }
}

interface ErrorBody {
  error?: string;
  message?: string;
  fields?: FieldIssue[];
  retryAfterMs?: number;
  waitedMs?: number;
  lostKeys?: string[];
  requestId?: string;
  mayHoldUntil?: string;
  conflicts?: Array<{
    key: string;
    granularity: Conflict['granularity'];
    requestedMode: Conflict['requestedMode'];
    holders: Array<{ owner: string; mode: Conflict['requestedMode']; expiresAtMs?: number; expiresAt?: string }>;
    reason?: Conflict['reason'];
  }>;
}

function retryAfterHeader(headers: Headers | undefined): number | undefined {
  const value = Number(headers?.get('retry-after'));
  return Number.isFinite(value) && value > 0 ? value * 1000 : undefined;
}

/** The error a response stands for (call only for non-2xx answers). */
export function errorFromResponse(status: number, body: unknown, headers?: Headers): Error {
  const parsed = (typeof body === 'object' && body !== null ? body : {}) as ErrorBody;
  const message = parsed.message ?? `HTTP ${status}`;
  switch (parsed.error) {
    case 'ValidationError':
      return new ValidationError(message, { fields: parsed.fields ?? [] });
    case 'LockHeldError': {
      const conflicts: ConflictingKey[] = (parsed.conflicts ?? []).map((conflict) => ({
        key: conflict.key,
        granularity: conflict.granularity,
        requestedMode: conflict.requestedMode,
        holders: conflict.holders.map((holder) => ({
          owner: holder.owner,
          mode: holder.mode,
          expiresAt: holder.expiresAtMs ?? (holder.expiresAt ? Date.parse(holder.expiresAt) : 0),
        })),
        ...(conflict.reason ? { reason: conflict.reason } : {}),
      }));
      const retryAfterMs = parsed.retryAfterMs ?? retryAfterHeader(headers) ?? 1_000;
      return new LockHeldError(message, { conflicts, retryAfterMs, ...(parsed.waitedMs ? { waitedMs: parsed.waitedMs } : {}) });
    }
    case 'LeaseLostError':
      return new LeaseLostError(message, { leaseId: '', lostKeys: parsed.lostKeys ?? [] });
    case 'LeaseTokenMismatchError':
      return new LeaseTokenMismatchError(message, { leaseId: '' });
    case 'StoreUnavailableError':
      return new StoreUnavailableError(message, { operation: 'http', statusCode: status });
    case 'LockContentionError':
      return new LockContentionError(message, { keys: [], rounds: 0 });
    case 'StoreRejectedError':
      return new StoreRejectedError(message, { operation: 'http', statusCode: status });
    case 'LockOutcomeUnknownError':
      return new LockOutcomeUnknownError(message, {
        operation: 'acquire',
        ...(typeof parsed.requestId === 'string' ? { requestId: parsed.requestId } : {}),
        ...(typeof parsed.mayHoldUntil === 'string' ? { mayHoldUntil: Date.parse(parsed.mayHoldUntil) } : {}),
      });
    case 'FencingRangeError':
      return new FencingRangeError(message, { primaryTerm: 0, seqNo: 0 });
    default:
      if (status === 503) return new StoreUnavailableError(message, { operation: 'http', statusCode: status });
      return new LockServiceError(status, parsed.error ?? `HTTP${status}`, message, body);
  }
}
