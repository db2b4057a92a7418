/** `status`: the lock index's incarnation, fencing epoch, shards, counts and the oldest lease. */
import { UsageError } from '../../tools/cli/flags.js';
import type { LockIndexStatus } from '../admin-types.js';
import { type Command, printJson } from '../command.js';
import { EXIT } from '../outcome.js';
import { fields, relative } from '../render.js';

function oldest(lease: LockIndexStatus['oldestLease'], now: number): string {
  if (!lease) return 'none';
  return `${lease.namespace}/${lease.granularity} ${lease.key} held by ${lease.owner}, granted ${relative(lease.grantedAt, now)}, expires ${relative(lease.expiresAt, now)}`;
}

export const status: Command = async (context) => {
  if (context.operands.length > 0) throw new UsageError(`${context.operands[0]}: unexpected argument (status takes flags only)`);
  const answer = await context.backend().status();
  const now = context.now();
  if (context.json) printJson(context, answer);
  else
    context.out(
      fields([
        ['index', `${answer.index} (incarnation ${answer.incarnation}, epoch ${answer.epoch})`],
        ['shards', `${answer.shards.primaries} primary, ${answer.shards.replicas} replica${answer.shards.replicas === 1 ? '' : 's'} each`],
        ['locks', String(answer.locks)],
        ['holders', String(answer.holders)],
        ['waiters', String(answer.waiters)],
        ['work records', String(answer.workRecords)],
        ['audit records', String(answer.auditRecords)],
        ['oldest lease', oldest(answer.oldestLease, now)],
        ['counted from', `${answer.scanned} documents${answer.complete ? '' : ' (incomplete: the scan stopped at its limit; the counts are at least these)'}`],
      ]),
    );
  return EXIT.done;
};
