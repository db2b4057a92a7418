/** What revoke and drain take: the target, why (required: it is recorded and told), and who (--by, optional). */
import { UsageError } from '../tools/cli/flags.js';
import type { AdminInput } from './admin-types.js';
import { stringFlag } from './args.js';
import type { CommandContext } from './command.js';
import { targetOf } from './target-argument.js';

export function adminInput(context: Pick<CommandContext, 'operands' | 'flags'>, command: 'revoke' | 'drain'): AdminInput {
  const target = targetOf(context, command);
  const reason = stringFlag(context.flags, 'reason')?.trim();
  if (!reason) throw new UsageError(`--reason: needed: why you ${command} the lock (it is recorded, and told to those who lose it)`);
  const by = stringFlag(context.flags, 'by');
  if (by !== undefined && by.trim() === '') throw new UsageError('--by: must not be empty');
  return { ...target, reason, ...(by !== undefined ? { by: by.trim() } : {}) };
}
