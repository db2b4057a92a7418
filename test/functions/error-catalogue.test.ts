/**
 * One table gives every error its HTTP status, retryability, metric and log level (the wire
 * contract's ERRORS): the HTTP answer, the direct invocation's error and the engine's own classes
 * all agree with it.
 */
import { describe, expect, it } from 'vitest';
import { errorReply, InternalError, invocationError } from '../../functions/runtime/errors.js';
import { ERRORS, type ErrorName } from '../../packages/client/src/wire.js';
import { LockHeldError, QueueFullError, StoreRejectedError, StoreUnavailableError } from '../../packages/engine/src/index.js';
import { engineErrorOfEachName as engineErrors } from '../support/engine-errors.js';

it('every catalogue name but InternalError is an engine error above', () => {
  expect(new Set(engineErrors.map((error) => error.name))).toEqual(new Set(Object.keys(ERRORS).filter((name) => name !== 'InternalError')));
});

describe('the error catalogue', () => {
  it.each(engineErrors.map((error) => [error.name, error] as const))('%s answers with its catalogue status and retryability', (name, error) => {
    const spec = ERRORS[name as ErrorName];
    const reply = errorReply(error);
    expect(reply.statusCode).toBe(spec.status);
    expect(reply.level).toBe(spec.level);
    expect(reply.body).toMatchObject({ error: name, retryable: spec.retryable });
    expect(error.retryable).toBe(spec.retryable);
    expect(invocationError(error)).toBe(error);
  });

  it('a retryable store answer carries Retry-After; a held lock says when it may be free', () => {
    expect(errorReply(new StoreUnavailableError({ operation: 'acquire' }, 'down')).headers['Retry-After']).toBe('1');
    expect(errorReply(new LockHeldError({ conflicts: [], retryAfterMs: 2_500 })).headers['Retry-After']).toBe('3');
  });

  it('a full queue is a 429 naming the lock, the limit and the setting, with Retry-After', () => {
    const reply = errorReply(new QueueFullError({ key: 'jobs', limit: 1_000, queued: 1_000, retryAfterMs: 1_000 }));
    expect(reply.statusCode).toBe(429);
    expect(reply.headers['Retry-After']).toBe('1');
    expect(reply.body).toEqual({
      error: 'QueueFullError',
      message: 'the queue of lock jobs is full (1000 tickets, queue.maxTickets); nothing was written',
      retryable: true,
      key: 'jobs',
      limit: 1_000,
      queued: 1_000,
      retryAfterMs: 1_000,
    });
  });

  it('a store refusal the caller cannot act on, or anything unexpected, is an InternalError without internals', () => {
    for (const error of [new StoreRejectedError({ operation: 'acquire', reason: 'mapper_parsing_exception' }, 'mapping [x] broke'), new TypeError('boom')]) {
      const reply = errorReply(error, 'corr-1');
      expect(reply.statusCode).toBe(ERRORS.InternalError.status);
      expect(reply.body.error).toBe('InternalError');
      expect(reply.body.message).toContain('corr-1');
      expect(reply.body.message).not.toContain('mapping');
      expect(invocationError(error, 'corr-1')).toBeInstanceOf(InternalError);
    }
  });
});
