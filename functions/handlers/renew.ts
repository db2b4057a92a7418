/** POST /renew, or a direct invocation: extends a lease; the answer carries the token to use from now on. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { renewSchema } from '../core/index.js';
import { lockHandler } from '../runtime/handler.js';
import { presentRenewal } from '../runtime/present.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfToken } from '../runtime/scope.js';

const rt = runtime();

export const handler = lockHandler(rt, {
  name: 'renew',
  schema: renewSchema(rt.settings),
  describe: (input) => scopeOfToken(input.leaseToken),
  access: (input) => ({ action: 'renew', leaseToken: input.leaseToken }),
  run: (engine, input) => engine.renew(input),
  present: presentRenewal,
  record: (metrics) => metrics.addMetric('LeaseRenewed', MetricUnit.Count, 1),
  summary: (renewal) => ({ fencingToken: renewal.fencingToken, ttlMs: renewal.ttlMs }),
});
