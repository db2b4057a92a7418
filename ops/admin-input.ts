/** What revoke and drain take: the target, why (required: it is recorded and told), and who. */
import { hostname, userInfo } from 'node:os';
import { UsageError } from '../infra/lib/cli.js';
import type { AdminInput } from './admin-types.js';
import { stringFlag } from './args.js';
import type { CommandContext } from './command.js';
import { targetOf } from './target-argument.js';

/** Who runs this, when --by does not say: user@host (a stage records the caller's IAM principal instead). */
function operatorName(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `operator@${hostname()}`;
  }
}

export function adminInput(context: Pick<CommandContext, 'operands' | 'flags'>, command: 'revoke' | 'drain'): AdminInput {
  const target = targetOf(context, command);
  const reason = stringFlag(context.flags, 'reason')?.trim();
  if (!reason) throw new UsageError(`--reason: needed: why you ${command} the lock (it is recorded, and told to those who lose it)`);
  const by = stringFlag(context.flags, 'by');
  if (by !== undefined && by.trim() === '') throw new UsageError('--by: must not be empty');
  // Over a stage the server records the caller's IAM principal: a name of our own would not be believed.
  if (by !== undefined && context.flags.url !== undefined) throw new UsageError('--by: not with --url (the stage records your IAM principal)');
  return { ...target, reason, by: by ?? operatorName() };
}
