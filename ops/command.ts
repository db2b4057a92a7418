/** What a command gets: its part of the command line, the backend (made once its arguments are known good), and where to print. */
import type { Flags } from './args.js';
import type { OpsBackend } from './backend.js';

export interface CommandContext {
  operands: string[];
  flags: Flags;
  /** The backend the flags choose; made only after the command has checked its arguments. */
  backend(): OpsBackend;
  /** Prints a block of output (a newline is added). */
  out(text: string): void;
  json: boolean;
  now(): number;
}

/** Runs a command; the number is the exit code (see outcome.ts). */
export type Command = (context: CommandContext) => Promise<number>;

/** `--json`: the answer as JSON, for scripts. */
export const printJson = (context: CommandContext, answer: unknown): void => context.out(JSON.stringify(answer, null, 2));
