/**
 * Exit codes by outcome, and every failure as one line (the whole error with --verbose):
 *
 *   0 done   1 failed (the server erred, or could not be reached)   2 usage (bad arguments)
 *   3 nothing there (no lock listed, a free target, nobody to revoke, nobody queued)   4 refused (403)
 */
import { inspect } from 'node:util';
import { UsageError } from '../tools/cli/flags.js';
import { explainServiceError } from '../tools/cli/service-errors.js';

export const EXIT = { done: 0, failed: 1, usage: 2, nothing: 3, refused: 4 } as const;

/** The call the HTTP backend was answered on ("POST /revoke"), when it says. */
const requestOf = (error: Error): string => {
  const { request } = error as { request?: unknown };
  return typeof request === 'string' ? `${request}: ` : '';
};

const statusOf = (error: Error): number | undefined => {
  const { status } = error as { status?: unknown };
  return typeof status === 'number' ? status : undefined;
};

const firstLine = (text: string): string => text.split('\n')[0]!.trim();

/** What a failure prints, and the code the process exits with. */
export function describeOutcome(error: unknown, verbose: boolean): { text: string; code: number } {
  const details = verbose ? `\n\n${error instanceof Error ? inspect(error, { depth: 6 }) : String(error)}` : '';
  const say = (line: string, code: number) => ({ text: `error: ${line}${details}`, code });
  if (error instanceof UsageError) {
    const line = firstLine(error.message);
    return say(`${line}${/see --help/.test(line) ? '' : ' (see --help)'}`, EXIT.usage);
  }
  if (!(error instanceof Error)) return say(String(error), EXIT.failed);
  const where = requestOf(error);
  const status = statusOf(error);
  // The service's own word on the arguments (a namespace it does not take): a usage mistake, whichever backend said it.
  if (error.name === 'ValidationError') return say(`${where}${firstLine(error.message)} (see --help)`, EXIT.usage);
  if (error.name === 'AccessDeniedError' || status === 403) return say(`refused: ${where}${error.name}: ${firstLine(error.message)}`, EXIT.refused);
  const service = explainServiceError(error);
  if (service) return say(`${service.problem.headline}: ${service.problem.failed}`, EXIT.failed);
  if (status !== undefined) return say(`${where}${status} ${error.name}: ${firstLine(error.message)}`, EXIT.failed);
  const named = error.name !== 'Error' && !error.message.startsWith(error.name) ? `${error.name}: ` : '';
  return say(`${named}${firstLine(error.message)}`, EXIT.failed);
}
