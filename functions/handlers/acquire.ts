/** POST /acquire, or a direct invocation with the same JSON: takes a lock and answers the grant. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { rulesFor } from '../../packages/engine/src/granularity/index.js';
import { presentAcquired } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfTarget } from '../runtime/scope.js';

export const handler = lockHandler(runtime(), {
  name: 'acquire',
  describe: (request) => ({
    ...scopeOfTarget(request.target),
    ...(request.requestId ? { requestId: request.requestId } : {}),
    ...(request.work ? { workKeyHash: request.work.keyHash } : {}),
  }),
  access: ({ target, mode, owner }) => ({
    action: 'acquire',
    namespace: target.namespace,
    owner,
    // The lock documents of its own it takes (document ids), which quotas count.
    keys: rulesFor(target.granularity).plan(target, mode).length,
  }),
  // A waiter with a wake channel is answered at once (queued; woken later to claim with the same acquire without wake); the others wait in the call.
  // Work named by an idempotency key answers its recorded result when it was completed (an event without its key: the lock alone, and the grant says so).
  run: (engine, request) =>
    request.work || request.missingKeyPath !== undefined
      ? engine.acquireWork(request)
      : request.wake
        ? engine.acquireOrQueue({ ...request, wake: request.wake })
        : engine.acquire(request),
  present: presentAcquired,
  status: (outcome) => ('status' in outcome && outcome.status === 'queued' ? 202 : 200),
  record: (metrics, outcome) => {
    if ('status' in outcome && outcome.status === 'completed') {
      metrics.addMetric('WorkAlreadyCompleted', MetricUnit.Count, 1);
      return;
    }
    if ('status' in outcome) {
      metrics.addMetric('Queued', MetricUnit.Count, 1);
      metrics.addMetric('QueueDepth', MetricUnit.Count, outcome.ahead + 1);
      return;
    }
    metrics.addMetric('LockGranted', MetricUnit.Count, 1);
    if (outcome.waitedMs !== undefined) metrics.addMetric('WaitTime', MetricUnit.Milliseconds, outcome.waitedMs);
  },
  summary: (outcome) =>
    !('status' in outcome)
      ? { mode: outcome.mode, fencingToken: outcome.fencingToken, reused: outcome.reused, keys: outcome.keys.length }
      : outcome.status === 'queued'
        ? { status: 'queued', ticket: outcome.ticket, ahead: outcome.ahead }
        : { status: 'completed', keyHash: outcome.keyHash },
});
