/** POST /release, or a direct invocation: gives a lease up; a lease already gone is an outcome, not an error. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { releaseSchema } from '../core/index.js';
import { lockHandler } from '../runtime/handler.js';
import { presentRelease } from '../runtime/present.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfToken } from '../runtime/scope.js';

const rt = runtime();

export const handler = lockHandler(rt, {
  name: 'release',
  schema: releaseSchema,
  describe: (input) => scopeOfToken(input.leaseToken),
  // The lease token's secret is the whole permission: giving a lock up is never refused.
  access: () => ({ action: 'release' }),
  run: (engine, input) => engine.release(input),
  present: presentRelease,
  record: (metrics, release) => {
    if (release.outcome === 'not_held') metrics.addMetric('ReleaseNotHeld', MetricUnit.Count, 1);
    else metrics.addMetric('LockReleased', MetricUnit.Count, 1);
    if (release.outcome === 'expired') metrics.addMetric('ReleasedAfterExpiry', MetricUnit.Count, 1);
  },
  summary: (release) => ({ outcome: release.outcome, missingKeys: release.missingKeys.length }),
});
