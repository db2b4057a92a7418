/** POST /acquire, or a direct invocation with the same JSON: takes a lock and answers the grant. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { acquireSchema, toAcquireRequest } from '../core/index.js';
import { lockHandler } from '../runtime/handler.js';
import { presentGrant } from '../runtime/present.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfTarget } from '../runtime/scope.js';

const rt = runtime();

export const handler = lockHandler(rt, {
  name: 'acquire',
  schema: acquireSchema(rt.settings),
  describe: (input) => ({ ...scopeOfTarget(input), ...(input.requestId ? { requestId: input.requestId } : {}) }),
  access: (input) => ({
    action: 'acquire',
    namespace: input.namespace,
    owner: input.owner,
    keys: input.granularity === 'document' ? new Set(input.ids).size : 1,
  }),
  run: (engine, input) => engine.acquire(toAcquireRequest(input)),
  present: presentGrant,
  record: (metrics) => metrics.addMetric('LockGranted', MetricUnit.Count, 1),
  summary: (grant) => ({ mode: grant.mode, fencingToken: grant.fencingToken, reused: grant.reused, keys: grant.keys.length }),
});
