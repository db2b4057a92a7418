/** Scheduled (EventBridge) or invoked directly: deletes expired locks and prunes expired shared holders. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { presentSweep } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { runtime } from '../runtime/runtime.js';

export const handler = lockHandler(runtime(), {
  name: 'sweep',
  describe: () => ({ granularity: 'all' }),
  access: () => ({ action: 'sweep' }),
  run: (engine, request) => engine.sweep(request),
  present: presentSweep,
  record: (metrics, report) => {
    metrics.addMetric('LocksSwept', MetricUnit.Count, report.deletedLocks);
    metrics.addMetric('HoldersPruned', MetricUnit.Count, report.prunedHolders);
    metrics.addMetric('SweepConflicts', MetricUnit.Count, report.conflicts);
    metrics.addMetric('HandOvers', MetricUnit.Count, report.handedOver);
    // The same count under the name its alarm reads: holders whose lease ran out unreleased (a holder that died or hung).
    metrics.addMetric('LeasesRunOut', MetricUnit.Count, report.prunedHolders);
  },
  summary: (report) => ({ ...report }),
});
