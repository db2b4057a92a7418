/** POST /acquire, or a direct invocation with the same JSON: takes a lock and answers the grant. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { lockHandler } from '../runtime/handler.js';
import { presentGrant } from '../runtime/present.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfTarget } from '../runtime/scope.js';

export const handler = lockHandler(runtime(), {
  name: 'acquire',
  describe: (request) => ({ ...scopeOfTarget(request.target), ...(request.requestId ? { requestId: request.requestId } : {}) }),
  access: ({ target, owner }) => ({ action: 'acquire', namespace: target.namespace, owner, keys: target.granularity === 'document' ? target.ids.length : 1 }),
  run: (engine, request) => engine.acquire(request),
  present: presentGrant,
  record: (metrics) => metrics.addMetric('LockGranted', MetricUnit.Count, 1),
  summary: (grant) => ({ mode: grant.mode, fencingToken: grant.fencingToken, reused: grant.reused, keys: grant.keys.length }),
});
