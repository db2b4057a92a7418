/**
 * The engine side's LockDriver (shared/lock-driver.ts): a LockService called in this process, its
 * errors read as the client reads the HTTP answer, through the functions' own error mapping
 * (functions/runtime/errors.ts `errorReply`), then as k6/lock-api.ts classifies the status: 409 or a
 * 503 LockContentionError is busy (retried, gave up at the budget), any other 503 is unavailable
 * (retried, an error at the budget), anything else an error; the Retry-After hint comes from the
 * body or the header alike.
 */

import { errorReply } from '../../../functions/runtime/errors.js';
import type { LockService } from '../../../packages/engine/src/service.js';
import type { AcquireAnswer, LockDriver, ReleaseAnswer } from '../../shared/lock-driver.js';

/** What an engine error means to the k6 client: the functions' HTTP answer, classified as k6/lock-api.ts does. */
export function httpAnswer(error: unknown): { kind: 'conflict' | 'unavailable' | 'error'; retryAfterMs?: number; status: number; detail: string } {
  const reply = errorReply(error);
  const header = Number(reply.headers['Retry-After']);
  const retryAfterMs =
    typeof reply.body.retryAfterMs === 'number' ? reply.body.retryAfterMs : Number.isFinite(header) && header > 0 ? header * 1000 : undefined;
  const hint = retryAfterMs === undefined ? {} : { retryAfterMs };
  // The engine's own words (an unmapped error's HTTP body says only "Internal error").
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (reply.statusCode === 409 || (reply.statusCode === 503 && reply.body.error === 'LockContentionError')) {
    return { kind: 'conflict', status: reply.statusCode, detail, ...hint };
  }
  if (reply.statusCode === 503) return { kind: 'unavailable', status: reply.statusCode, detail, ...hint };
  return { kind: 'error', status: reply.statusCode, detail };
}

export function engineLockDriver(engine: LockService): LockDriver {
  return {
    async acquire(request): Promise<AcquireAnswer> {
      const sent = performance.now();
      try {
        const grant = await engine.acquire(request);
        return {
          kind: 'granted',
          durationMs: performance.now() - sent,
          grant: { leaseToken: grant.leaseToken, fencingToken: grant.fencingToken, expiresAt: grant.expiresAt },
        };
      } catch (error) {
        const durationMs = performance.now() - sent;
        const answer = httpAnswer(error);
        if (answer.kind === 'error') return { kind: 'error', status: answer.status, detail: answer.detail, durationMs };
        return { kind: answer.kind, durationMs, ...(answer.retryAfterMs === undefined ? {} : { retryAfterMs: answer.retryAfterMs }) };
      }
    },
    async release(leaseToken): Promise<ReleaseAnswer> {
      try {
        return { ok: true, outcome: (await engine.release({ leaseToken })).outcome };
      } catch (error) {
        const answer = httpAnswer(error);
        return { ok: false, status: answer.status, detail: answer.detail };
      }
    },
  };
}
