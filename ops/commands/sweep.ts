/** `sweep`: one sweep now (as the schedule runs it): expired locks deleted, expired holders pruned, waiters of freed locks served. */
import { numberFlag, UsageError } from '../../tools/cli/flags.js';
import { stringFlag } from '../args.js';
import type { SweepOptions } from '../backend.js';
import { type Command, printJson } from '../command.js';
import { EXIT } from '../outcome.js';
import { fields } from '../render.js';

function sweepOptions(context: Parameters<Command>[0]): SweepOptions {
  if (context.operands.length > 0) throw new UsageError(`${context.operands[0]}: unexpected argument (sweep takes flags only)`);
  const batchSize = stringFlag(context.flags, 'batch-size');
  const maxBatches = stringFlag(context.flags, 'max-batches');
  return {
    ...(batchSize !== undefined ? { batchSize: numberFlag('--batch-size', batchSize, { integer: true, min: 1, max: 10_000 }, 0) } : {}),
    ...(maxBatches !== undefined ? { maxBatches: numberFlag('--max-batches', maxBatches, { integer: true, min: 1, max: 10_000 }, 0) } : {}),
  };
}

export const sweep: Command = async (context) => {
  const report = await context.backend().sweep(sweepOptions(context));
  if (context.json) printJson(context, report);
  else
    context.out(
      fields([
        ['scanned', String(report.scanned)],
        ['locks deleted', String(report.deletedLocks)],
        ['holders pruned', String(report.prunedHolders)],
        ['handed over', String(report.handedOver)],
        ['conflicts', String(report.conflicts)],
        ['batches', String(report.batches)],
      ]),
    );
  return EXIT.done;
};
