/**
 * One engine error of each name of the wire catalogue but InternalError (the runtime's own), raised
 * with fields as the engine raises them: for the tests that hold every name against the catalogue, the
 * HTTP answer or a state machine's Retry and Catch.
 */
import * as engine from '../../packages/engine/src/errors.js';

export const engineErrorOfEachName: engine.LockError[] = [
  new engine.ValidationError({ fields: [{ field: 'owner', rule: 'required', message: 'is required' }] }),
  new engine.LockHeldError({ conflicts: [], retryAfterMs: 2_500 }),
  new engine.PermitLimitMismatchError({ key: 'jobs', requestedLimit: 3, heldLimit: 5 }),
  new engine.LeaseLostError({ leaseId: 'l', lostKeys: ['a'] }),
  new engine.LeaseTokenMismatchError({ leaseId: 'l' }),
  new engine.LockWaitExpiredError({ ticket: 't', key: 'a' }),
  new engine.StoreUnavailableError({ operation: 'acquire' }, 'down'),
  // The one store refusal a caller is told of as it is (any other answers as InternalError).
  new engine.StoreRejectedError({ operation: 'acquire', reason: 'index_not_found_exception' }, 'no index'),
  new engine.LockContentionError({ keys: ['a'], rounds: 9 }),
  new engine.LockOutcomeUnknownError({ operation: 'acquire', requestId: 'r-1', mayHoldUntil: 1_700_000_000_000 }, 'unknown'),
  new engine.FencingRangeError({ primaryTerm: 1_000, seqNo: 0 }, 'spent'),
  new engine.AccessDeniedError({ action: 'acquire', reason: 'not_allowed', namespace: 'orders', principal: 'direct' }),
  new engine.QuotaExceededError({ per: 'owner', subject: 'o', limit: 2, held: 2, requested: 1 }),
  new engine.WorkInProgressError({ keyHash: 'h', owner: 'o', retryAfterMs: 1_000 }),
  new engine.WorkPayloadMismatchError({ keyHash: 'h', found: 'completed', storedPayloadHash: 'a'.repeat(43), payloadHash: 'b'.repeat(43) }),
  new engine.QueueFullError({ key: 'jobs', limit: 1_000, queued: 1_000, retryAfterMs: 1_000 }),
];
