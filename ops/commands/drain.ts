/** `drain <target> --reason TEXT`: tell every waiter queued for the target (its wake channel gets the reason), then clear the queue. */
import { adminInput } from '../admin-input.js';
import { type Command, printJson } from '../command.js';
import { EXIT } from '../outcome.js';
import { count, table } from '../render.js';
import { targetText } from '../target.js';

export const drain: Command = async (context) => {
  const input = adminInput(context, 'drain');
  const drained = await context.backend().drain(input);
  const what = targetText(input);
  if (context.json) printJson(context, drained);
  else if (drained.dropped.length === 0) context.out(`${what}: nobody was queued; nothing drained`);
  else {
    const rows = drained.dropped.map((ticket) => [ticket.key, ticket.owner, ticket.ticket]);
    context.out(
      [
        `${what}: drained ${count(drained.dropped.length, 'waiter')}, told ${drained.told} (by ${drained.by}: ${drained.reason})`,
        table(['KEY', 'OWNER', 'TICKET'], rows),
      ].join('\n'),
    );
  }
  return drained.dropped.length === 0 ? EXIT.nothing : EXIT.done;
};
