/** `inspect <target>`: who holds each key of a target, and each lock above it that can block it, now (realtime). */

import type { LockMode } from '../../packages/client/src/wire.js';
import { UsageError } from '../../tools/cli/flags.js';
import { stringFlag } from '../args.js';
import { type Command, printJson } from '../command.js';
import { locksTable } from '../locks-table.js';
import { EXIT } from '../outcome.js';
import { targetText } from '../target.js';
import { targetOf } from '../target-argument.js';

function modeOf(text: string | undefined): LockMode {
  if (text === undefined) return 'exclusive';
  if (text === 'exclusive' || text === 'shared') return text;
  throw new UsageError(`--mode: must be exclusive or shared (got "${text}")`);
}

export const inspect: Command = async (context) => {
  const target = targetOf(context, 'inspect');
  const mode = modeOf(stringFlag(context.flags, 'mode'));
  const locks = await context.backend().inspect({ ...target, mode });
  if (context.json) printJson(context, { locks });
  else if (locks.length === 0) context.out(`${targetText(target)}: free (nobody holds it, nor a lock above it)`);
  else context.out(locksTable(locks, context.now()));
  return locks.length === 0 ? EXIT.nothing : EXIT.done;
};
