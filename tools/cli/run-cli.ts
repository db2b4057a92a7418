/**
 * What every command does at its edge: `runCli(main)` turns any failure into a few lines a person
 * can act on, and the exit code.
 *
 *   usage mistake       error: --rate: must be a number > 0 (got "-5") (see --help)        exit 2
 *   service unreachable error: cannot reach Elasticsearch at http://127.0.0.1:9999 ...     exit 1
 *   or refusing         error: refused by Elasticsearch at ... (401/403), no answer from ..., no
 *                       secure connection to ... (http vs https), the server at ... is not Elasticsearch
 *                         tried / failed / to fix lines
 *   anything else       error: <message>                                                  exit 1
 *
 * Stack traces and the full error (causes included) only with `--verbose` or `DEBUG` set; without
 * them a long message (a child process's output) is cut to a few lines (`briefly`, `childFailed`).
 */
import { inspect } from 'node:util';
import { UsageError } from './flags.js';
import { explainServiceError } from './service-errors.js';

export const isVerbose = (argv: string[] = process.argv): boolean => argv.includes('--verbose') || Boolean(process.env.DEBUG);

/**
 * A child process that failed (the error of execFile / promisified execFile) as one readable error:
 * what ran, how it ended, and the line of its output that says why (an "XxxError: ..." line, else
 * its last line). The whole output stays in the cause, for --verbose.
 */
export function childFailed(what: string, error: unknown): Error {
  const { code, signal, stderr, stdout } = (error ?? {}) as { code?: unknown; signal?: unknown; stderr?: unknown; stdout?: unknown };
  const output = `${String(stderr ?? '')}\n${String(stdout ?? '')}`
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^Node\.js v\d/.test(line) && !/^at /.test(line));
  const why = output.find((line) => /^([A-Z]\w*)?(Error|Exception)\b.*:/.test(line)) ?? output.at(-1);
  const ended = typeof code === 'number' ? `exit ${code}` : signal ? `killed by ${String(signal)}` : typeof code === 'string' ? code : 'failed';
  const reason = why ? `: ${why.length > 200 ? `${why.slice(0, 200)} ...` : why}` : error instanceof Error ? `: ${error.message.split('\n')[0]}` : '';
  return new Error(`${what} failed (${ended})${reason}`, { cause: error });
}

/** Lines and characters per line of a failure's message printed without --verbose. */
const BRIEF = { lines: 12, width: 300 };

/** A message cut to a readable size (a child's output or a bundled source line can be huge); --verbose has it all. */
export function briefly(message: string): string {
  const lines = message.trimEnd().split('\n');
  const kept = lines.slice(0, BRIEF.lines).map((line) => (line.length > BRIEF.width ? `${line.slice(0, BRIEF.width)} ...` : line));
  const cut = lines.length - kept.length;
  return cut > 0 ? `${kept.join('\n')}\n... (${cut} more line${cut === 1 ? '' : 's'})` : kept.join('\n');
}

/** The text and exit code for a failure (2 for usage mistakes, 1 otherwise). */
export function describeFailure(error: unknown, verbose: boolean): { text: string; code: number } {
  const details = verbose ? `\n\n${error instanceof Error ? inspect(error, { depth: 6 }) : String(error)}` : '';
  if (error instanceof UsageError) {
    const line = error.message.trim();
    return { text: `error: ${line}${/see --help/.test(line) ? '' : ' (see --help)'}${details}`, code: 2 };
  }
  const service = explainServiceError(error);
  if (service) return { text: `error: ${service.message}${details}`, code: 1 };
  const message = error instanceof Error ? error.message : String(error);
  if (verbose) return { text: `error: ${message}${details}`, code: 1 };
  return { text: `error: ${briefly(message)}\n(run again with --verbose, or DEBUG=1, for the stack trace)`, code: 1 };
}

/**
 * Runs a command's main: a number it returns is the exit code; nothing keeps the process running
 * (a server). A failure, in main or later (an uncaught exception or rejection while a server
 * runs), is printed by describeFailure and exits 2 (usage) or 1.
 */
export function runCli(main: (argv: string[]) => Promise<number | undefined> | number | undefined, argv = process.argv.slice(2)): void {
  const fail = (error: unknown): void => {
    const { text, code } = describeFailure(error, isVerbose(argv));
    console.error(text);
    process.exit(code);
  };
  process.on('uncaughtException', fail);
  process.on('unhandledRejection', fail);
  Promise.resolve()
    .then(() => main(argv))
    .then((code) => {
      if (typeof code === 'number') process.exit(code);
    }, fail);
}
