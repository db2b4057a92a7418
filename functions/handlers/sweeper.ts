/** Scheduled (EventBridge) or invoked directly: deletes expired locks and prunes expired shared holders. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { lockHandler } from '../runtime/handler.js';
import { presentSweep } from '../runtime/present.js';
import { runtime } from '../runtime/runtime.js';
import { sweepSchema } from '../runtime/schemas.js';

const rt = runtime();

export const handler = lockHandler(rt, {
  name: 'sweep',
  schema: sweepSchema,
  describe: () => ({ granularity: 'all' }),
  // Scheduled, or invoked by whoever IAM lets; it deletes only what has expired.
  access: () => ({ action: 'sweep' }),
  run: (engine, input) => engine.sweep(input),
  present: presentSweep,
  record: (metrics, report) => {
    metrics.addMetric('LocksSwept', MetricUnit.Count, report.deletedLocks);
    metrics.addMetric('HoldersPruned', MetricUnit.Count, report.prunedHolders);
    metrics.addMetric('SweepConflicts', MetricUnit.Count, report.conflicts);
  },
  summary: (report) => ({ ...report }),
});
