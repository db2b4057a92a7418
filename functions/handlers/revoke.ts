/** POST /revoke, or a direct invocation: break glass, an operator takes the lock on a target from whoever holds it (audited; needs the policy action revoke). */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { presentRevocation } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { operatorOf } from '../runtime/operator.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfTarget } from '../runtime/scope.js';

export const handler = lockHandler(runtime(), {
  name: 'revoke',
  describe: (request) => scopeOfTarget(request.target),
  access: ({ target }) => ({ action: 'revoke', namespace: target.namespace, operation: 'revoke' }),
  run: (engine, request, call) => engine.revoke({ ...request, by: operatorOf(call, request) }),
  present: presentRevocation,
  record: (metrics, revocation) => metrics.addMetric('LeasesRevoked', MetricUnit.Count, revocation.revoked.length),
  level: 'warn',
  summary: (revocation) => ({
    audit: 'revoke',
    by: revocation.by,
    reason: revocation.reason,
    revoked: revocation.revoked.map(({ key, leaseId, owner, mode, fencingToken }) => ({ key, leaseId, owner, mode, fencingToken })),
    fencingToken: revocation.fencingToken,
  }),
});
