/** A command's target: the one argument in the short form, or the flags; never both. */
import { UsageError } from '../tools/cli/flags.js';
import { stringFlag } from './args.js';
import type { CommandContext } from './command.js';
import { parseTarget, TARGET_SYNTAX, type TargetFields, targetFromFlags } from './target.js';

export function targetOf(context: Pick<CommandContext, 'operands' | 'flags'>, command: string): TargetFields {
  const { operands, flags } = context;
  if (operands.length > 1) throw new UsageError(`${operands[1]}: unexpected argument (${command} takes one target: ${TARGET_SYNTAX})`);
  const named = ['namespace', 'granularity', 'ids', 'path'].filter((name) => flags[name] !== undefined);
  const [text] = operands;
  if (text !== undefined) {
    if (named.length > 0) throw new UsageError(`--${named[0]}: not with a target argument (give one or the other)`);
    return parseTarget(text);
  }
  if (named.length === 0) throw new UsageError(`a target is needed: ${TARGET_SYNTAX}, or --namespace and --granularity`);
  return targetFromFlags({
    namespace: stringFlag(flags, 'namespace'),
    granularity: stringFlag(flags, 'granularity'),
    ids: stringFlag(flags, 'ids'),
    path: stringFlag(flags, 'path'),
  });
}
