/** POST /renew, or a direct invocation: extends a lease; the answer carries the token to use from now on. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { presentRenewal } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfTarget } from '../runtime/scope.js';

export const handler = lockHandler(runtime(), {
  name: 'renew',
  describe: (request) => scopeOfTarget(request.lease.target),
  access: ({ lease }) => ({ action: 'renew', namespace: lease.target.namespace }),
  run: (engine, request) => engine.renew(request),
  present: presentRenewal,
  record: (metrics) => metrics.addMetric('LeaseRenewed', MetricUnit.Count, 1),
  summary: (renewal) => ({ fencingToken: renewal.fencingToken, ttlMs: renewal.ttlMs }),
});
