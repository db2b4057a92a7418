/** `list`: live locks, by namespace, granularity, owner or path prefix (search: about a second behind). */

import type { Granularity, ListQuery } from '../../packages/client/src/wire.js';
import { numberFlag, UsageError } from '../../tools/cli/flags.js';
import { stringFlag } from '../args.js';
import { type Command, printJson } from '../command.js';
import { locksTable } from '../locks-table.js';
import { EXIT } from '../outcome.js';
import { count } from '../render.js';

/** The list query of the flags; the service checks the names' own rules. */
function listQuery(context: Parameters<Command>[0]): ListQuery {
  if (context.operands.length > 0) throw new UsageError(`${context.operands[0]}: unexpected argument (list takes flags only)`);
  const { flags } = context;
  const limit = stringFlag(flags, 'limit');
  const fields = {
    namespace: stringFlag(flags, 'namespace'),
    granularity: stringFlag(flags, 'granularity') as Granularity | undefined,
    owner: stringFlag(flags, 'owner'),
    pathPrefix: stringFlag(flags, 'path-prefix'),
    limit: limit === undefined ? undefined : numberFlag('--limit', limit, { integer: true, min: 1, max: 1000 }, 100),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as ListQuery;
}

export const list: Command = async (context) => {
  const query = listQuery(context);
  const locks = await context.backend().list(query);
  if (context.json) printJson(context, { locks });
  else if (locks.length === 0) context.out('no live locks found');
  else {
    const holders = locks.reduce((sum, lock) => sum + lock.holders.length, 0);
    context.out(`${locksTable(locks, context.now())}\n${count(locks.length, 'lock')}, ${count(holders, 'holder')}`);
  }
  return locks.length === 0 ? EXIT.nothing : EXIT.done;
};
