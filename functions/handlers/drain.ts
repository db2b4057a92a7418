/** POST /drain, or a direct invocation: an operator empties a target's queue and its channel waiters are told (audited; needs the policy action revoke). */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { presentDrained } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { operatorOf } from '../runtime/operator.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfTarget } from '../runtime/scope.js';

export const handler = lockHandler(runtime(), {
  name: 'drain',
  describe: (request) => scopeOfTarget(request.target),
  access: ({ target }) => ({ action: 'revoke', namespace: target.namespace, operation: 'drain' }),
  run: (engine, request, call) => engine.drain({ ...request, by: operatorOf(call, request) }),
  present: presentDrained,
  record: (metrics, drained) => metrics.addMetric('TicketsDrained', MetricUnit.Count, drained.dropped.length),
  level: 'warn',
  summary: (drained) => ({ audit: 'drain', by: drained.by, reason: drained.reason, dropped: drained.dropped, told: drained.told }),
});
