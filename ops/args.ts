/**
 * The command line: `<command> [target] [flags]`, flags anywhere. Every command takes the backend
 * flags; each takes its own besides, and a flag of another command is a usage mistake naming it.
 */

import { STORE_FLAG } from '../infra/lib/store-target.js';
import { type FlagSpec, parseFlags, UsageError } from '../tools/cli/flags.js';

/** Where the commands go, and how the answer is printed: every command takes these. */
const COMMON = {
  json: { type: 'boolean' },
  url: { type: 'string' },
  region: { type: 'string' },
  unsigned: { type: 'boolean' },
  ...STORE_FLAG,
  index: { type: 'string' },
  stage: { type: 'string' },
  'sweeper-function': { type: 'string' },
  'lambda-endpoint': { type: 'string' },
} as const satisfies FlagSpec;

const TARGET = {
  namespace: { type: 'string' },
  granularity: { type: 'string' },
  ids: { type: 'string' },
  path: { type: 'string' },
} as const satisfies FlagSpec;

const ADMIN = { ...TARGET, reason: { type: 'string' }, by: { type: 'string' } } as const satisfies FlagSpec;

export const COMMANDS = {
  list: {
    flags: {
      namespace: TARGET.namespace,
      granularity: TARGET.granularity,
      owner: { type: 'string' },
      'path-prefix': { type: 'string' },
      limit: { type: 'string' },
    },
  },
  inspect: { flags: { ...TARGET, mode: { type: 'string' } } },
  revoke: { flags: ADMIN },
  drain: { flags: ADMIN },
  sweep: { flags: { 'batch-size': { type: 'string' }, 'max-batches': { type: 'string' } } },
  status: { flags: {} },
} as const satisfies Record<string, { flags: FlagSpec }>;

export type CommandName = keyof typeof COMMANDS;

const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

/** Every flag any command takes, so that flags parse wherever they stand; which command may have which is checked after. */
const ALL_FLAGS: FlagSpec = Object.assign({}, COMMON, ...COMMAND_NAMES.map((name) => COMMANDS[name].flags));

export type Flags = Record<string, string | boolean | undefined>;

export interface CommandLine {
  /** Undefined with a bare --help. */
  command: CommandName | undefined;
  /** The arguments after the command (a target). */
  operands: string[];
  flags: Flags;
}

export function parseCommandLine(argv: string[]): CommandLine {
  const { values, positionals } = parseFlags(argv, ALL_FLAGS, { positionals: true });
  const [name, ...operands] = positionals;
  if (name === undefined) {
    if (values.help) return { command: undefined, operands: [], flags: values };
    throw new UsageError(`a command is needed: ${COMMAND_NAMES.join(', ')}`);
  }
  const command = COMMAND_NAMES.find((one) => one === name);
  if (!command) throw new UsageError(`${name}: unknown command (the commands: ${COMMAND_NAMES.join(', ')})`);
  const allowed = new Set([...Object.keys(COMMON), ...Object.keys(COMMANDS[command].flags), 'help', 'verbose']);
  for (const [flag, value] of Object.entries(values)) {
    if (value !== undefined && !allowed.has(flag)) throw new UsageError(`--${flag}: not a flag of ${command}`);
  }
  return { command, operands, flags: values };
}

/** A string flag's value (undefined when absent). */
export const stringFlag = (flags: Flags, name: string): string | undefined => {
  const value = flags[name];
  return typeof value === 'string' ? value : undefined;
};
