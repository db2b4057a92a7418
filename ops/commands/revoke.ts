/**
 * `revoke <target> --reason TEXT`: break glass. Every holder of the target loses its lease at once
 * (its renew answers LeaseLostError), the revoke's own write takes a fencing token above theirs (so
 * a fenced write under a revoked token is refused once the next holder wrote), and the waiters are
 * served.
 */
import { adminInput } from '../admin-input.js';
import { type Command, printJson } from '../command.js';
import { EXIT } from '../outcome.js';
import { count, relative, table } from '../render.js';
import { targetText } from '../target.js';

export const revoke: Command = async (context) => {
  const input = adminInput(context, 'revoke');
  const revocation = await context.backend().revoke(input);
  const what = targetText(input);
  if (context.json) printJson(context, revocation);
  else if (revocation.revoked.length === 0) context.out(`${what}: nobody held it; nothing revoked`);
  else {
    const now = context.now();
    const rows = revocation.revoked.map((lease) => [lease.key, lease.owner, lease.mode, lease.leaseId, lease.fencingToken, relative(lease.expiresAt, now)]);
    context.out(
      [
        `${what}: revoked ${count(revocation.revoked.length, 'lease')} (by ${revocation.by}: ${revocation.reason})`,
        table(['KEY', 'OWNER', 'MODE', 'LEASE', 'FENCING TOKEN', 'WOULD HAVE EXPIRED'], rows),
        `fencing token now ${revocation.fencingToken}: writes fenced with the revoked tokens are refused once the next holder writes`,
        `handed over to ${count(revocation.handedOver, 'waiter')}`,
        ...(revocation.alsoReleased.length > 0 ? [`also released (the revoked leases' other keys): ${revocation.alsoReleased.join(', ')}`] : []),
      ].join('\n'),
    );
  }
  return revocation.revoked.length === 0 ? EXIT.nothing : EXIT.done;
};
