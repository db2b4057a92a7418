/**
 * The operator's CLI as a function: the command line in, the output through `io`, the exit code
 * out (outcome.ts). cli.ts runs it as a process; the tests call it directly.
 */
import { isVerbose } from '../tools/cli/run-cli.js';
import { type CommandName, parseCommandLine } from './args.js';
import type { OpsBackend } from './backend.js';
import { chooseBackend } from './choose-backend.js';
import type { Command } from './command.js';
import { drain } from './commands/drain.js';
import { inspect } from './commands/inspect.js';
import { list } from './commands/list.js';
import { revoke } from './commands/revoke.js';
import { status } from './commands/status.js';
import { sweep } from './commands/sweep.js';
import { describeOutcome, EXIT } from './outcome.js';
import { USAGE } from './usage.js';

const COMMANDS: Record<CommandName, Command> = { list, inspect, revoke, drain, sweep, status };

export interface OpsIo {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
  now(): number;
}

export const processIo: OpsIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
  now: Date.now,
};

export async function runOps(argv: string[], io: OpsIo = processIo): Promise<number> {
  let backend: OpsBackend | undefined;
  try {
    const line = parseCommandLine(argv);
    if (line.flags.help || !line.command) {
      io.out(USAGE);
      return EXIT.done;
    }
    const makeBackend = chooseBackend(line.command, line.flags, io.env);
    return await COMMANDS[line.command]({
      operands: line.operands,
      flags: line.flags,
      backend: () => {
        backend ??= makeBackend();
        return backend;
      },
      out: io.out,
      json: line.flags.json === true,
      now: io.now,
    });
  } catch (error) {
    const { text, code } = describeOutcome(error, isVerbose(argv) || Boolean(io.env.DEBUG));
    io.err(text);
    return code;
  } finally {
    await backend?.close().catch(() => {});
  }
}
