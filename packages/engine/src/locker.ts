/**
 * The lock engine in-process as the client package's Locker: the same calls as over HTTP or by
 * direct invocation (wire bodies in and out, errors as the package's classes by name), with no hop
 * in between. The service's own presentation does the translation (present.ts for answers,
 * error-reply.ts for refusals), so code written against the package behaves the same whichever way
 * it reaches the locks. The client package's testing entry and the example SQS consumer use it.
 */
import { errorFromBody, type Locker } from '@es-lease-locks/client';
import { errorReply } from './error-reply.js';
import { LockError } from './errors.js';
import type { LockTarget } from './model.js';
import { presentCompleted, presentGrant, presentRelease, presentRenewal, presentStates } from './present.js';
import type { LockService } from './service.js';

export function engineLocker(engine: LockService): Locker {
  return {
    // Work named by an idempotency key may answer its recorded result instead of a grant.
    acquire: (body) =>
      answer(async () => {
        if (body.idempotencyKey === undefined) return presentGrant(await engine.acquire(body));
        const outcome = await engine.acquireWork(body);
        if (!('status' in outcome)) return presentGrant(outcome);
        if (outcome.status === 'completed') return presentCompleted(outcome);
        throw new TypeError('an acquire without wake was queued');
      }),
    renew: (body) => answer(async () => presentRenewal(await engine.renew(body))),
    release: (body) => answer(async () => presentRelease(await engine.release(body))),
    // LockService validates the plain target once, as the functions do.
    inspect: ({ mode, ...target }) => answer(async () => presentStates(await engine.inspect(target as unknown as LockTarget, mode))),
    list: (query) => answer(async () => presentStates(await engine.list(query))),
  };
}

/** The engine's refusals as the package's error classes; anything else (a bug) stays as it is, with its stack. */
async function answer<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof LockError)) throw error;
    const reply = errorReply(error);
    throw errorFromBody(reply.body, { status: reply.statusCode, cause: error });
  }
}
