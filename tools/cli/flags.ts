/**
 * A command's flags: Node's parseArgs with its mistakes as a `UsageError` naming the flag (exit 2 by
 * runCli), numeric values checked against a rule that the error states in words.
 *
 *   error: --rate: must be a number > 0 (got "-5") (see --help)
 */
import { parseArgs } from 'node:util';

/** The user asked for something the command cannot take: one line naming the flag and the rule. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export type FlagSpec = Record<string, { type: 'string' | 'boolean'; short?: string }>;

/**
 * Node's parseArgs with its errors as UsageErrors naming the flag; `--help` and `--verbose` are
 * always accepted. A negative number after a string flag (`--rate -5`) is its value, so the value
 * check can say what is wrong with it.
 */
export function parseFlags(
  argv: string[],
  spec: FlagSpec,
  options: { positionals?: boolean } = {},
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const all: FlagSpec = { ...spec, help: { type: 'boolean', short: 'h' }, verbose: { type: 'boolean' } };
  try {
    const { values, positionals } = parseArgs({
      args: joinNegativeValues(argv, all),
      options: all,
      strict: true,
      allowPositionals: options.positionals ?? false,
    });
    return { values: values as Record<string, string | boolean | undefined>, positionals };
  } catch (error) {
    throw usageErrorFromParseArgs(error);
  }
}

/** `--flag -5` as `--flag=-5` for string flags, so parseArgs does not call the value ambiguous. */
export function joinNegativeValues(argv: string[], spec: FlagSpec): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    if (name !== undefined && spec[name]?.type === 'string' && next !== undefined && /^-(\d|\.\d|Infinity)/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/** parseArgs' messages ("Unknown option '--bogus'. To specify ...") as `--bogus: unknown flag`. */
export function usageErrorFromParseArgs(error: unknown): Error {
  if (!(error instanceof Error)) return new UsageError(String(error));
  const code = (error as { code?: string }).code ?? '';
  const flag = /'(-{1,2}[^' =]+)/.exec(error.message)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return new UsageError(`${flag}: unknown flag`);
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const argument = /argument '([^']*)'/.exec(error.message)?.[1] ?? '';
    return new UsageError(`${argument}: unexpected argument (this command takes flags only)`);
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (/does not take an argument/.test(error.message)) return new UsageError(`${flag}: takes no value`);
    return new UsageError(`${flag}: needs a value`);
  }
  return new UsageError(error.message.split('\n')[0]!);
}

export interface NumberRule {
  integer?: boolean;
  min?: number;
  /** The minimum itself is not allowed (`> min` rather than `>= min`). */
  exclusiveMin?: boolean;
  max?: number;
}

/** The rule in words: "a whole number from 1 to 9", "a number > 0". */
export function describeRule(rule: NumberRule): string {
  const kind = rule.integer ? 'a whole number' : 'a number';
  if (rule.min !== undefined && rule.max !== undefined && !rule.exclusiveMin) return `${kind} from ${rule.min} to ${rule.max}`;
  const parts = [
    rule.min !== undefined ? `${rule.exclusiveMin ? '>' : '>='} ${rule.min}` : undefined,
    rule.max !== undefined ? `<= ${rule.max}` : undefined,
  ].filter(Boolean);
  return parts.length > 0 ? `${kind} ${parts.join(' and ')}` : kind;
}

/** Whether `value` keeps `rule`. */
export function meetsRule(value: number, rule: NumberRule): boolean {
  if (!Number.isFinite(value)) return false;
  if (rule.integer && !Number.isInteger(value)) return false;
  if (rule.min !== undefined && (rule.exclusiveMin ? value <= rule.min : value < rule.min)) return false;
  return !(rule.max !== undefined && value > rule.max);
}

/** A numeric flag's value, or `fallback` when absent; a UsageError naming the flag and the rule otherwise. */
export function numberFlag(flag: string, text: string | undefined, rule: NumberRule, fallback: number): number {
  if (text === undefined) return fallback;
  const value = text.trim() === '' ? Number.NaN : Number(text);
  if (!meetsRule(value, rule)) throw new UsageError(`${flag}: must be ${describeRule(rule)} (got "${text}")`);
  return value;
}

/**
 * A comma-separated list of known names, each at most once, or what is wrong with it in words that
 * name the known ones: an empty item (`tree,,global`, a trailing comma), an unknown name, a repeat.
 */
export function readList<Name extends string>(text: string, known: readonly Name[], noun: string): { names: Name[] } | { problem: string } {
  const names = text.split(',').map((name) => name.trim());
  const allowed = known.join(', ');
  if (names.includes('')) return { problem: `an empty item in "${text}": expected ${noun} names separated by commas (${allowed})` };
  const unknown = names.find((name) => !(known as readonly string[]).includes(name));
  if (unknown !== undefined) return { problem: `unknown ${noun} "${unknown}" (${allowed})` };
  if (new Set(names).size !== names.length) return { problem: `a ${noun} is listed twice` };
  return { names: names as Name[] };
}

/** A comma-separated list of known names, each at most once: `--modes polling,queueing`; a UsageError naming the flag otherwise. */
export function listFlag<Name extends string>(flag: string, text: string, known: readonly Name[], noun: string): Name[] {
  const list = readList(text, known, noun);
  if ('problem' in list) throw new UsageError(`${flag}: ${list.problem}`);
  return list.names;
}

/** Prints the usage and returns true when --help was given. */
export function printHelp(values: { help?: unknown }, usage: string): boolean {
  if (!values.help) return false;
  console.log(usage);
  return true;
}
