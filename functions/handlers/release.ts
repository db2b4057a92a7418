/** POST /release, or a direct invocation: gives a lease up; a lease already gone is an outcome, not an error. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { presentRelease } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfTarget } from '../runtime/scope.js';

export const handler = lockHandler(runtime(), {
  name: 'release',
  describe: (request) => scopeOfTarget(request.lease.target),
  access: () => ({ action: 'release' }),
  run: (engine, request) => engine.release(request),
  present: presentRelease,
  record: (metrics, release) => {
    if (release.outcome === 'not_held') metrics.addMetric('ReleaseNotHeld', MetricUnit.Count, 1);
    else metrics.addMetric('LockReleased', MetricUnit.Count, 1);
    if (release.outcome === 'expired') metrics.addMetric('ReleasedAfterExpiry', MetricUnit.Count, 1);
    if (release.heldMs !== undefined) metrics.addMetric('HoldTime', MetricUnit.Milliseconds, release.heldMs);
    if (release.handedOver > 0) metrics.addMetric('HandOvers', MetricUnit.Count, release.handedOver);
    if (release.recorded) metrics.addMetric(release.recorded === 'completed' ? 'WorkCompleted' : 'WorkFailed', MetricUnit.Count, 1);
  },
  summary: (release) => ({
    outcome: release.outcome,
    missingKeys: release.missingKeys.length,
    handedOver: release.handedOver,
    ...(release.recorded ? { recorded: release.recorded } : {}),
  }),
});
