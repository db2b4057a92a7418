/** Runs the operator's CLI in this process (its main function), its output and exit code captured. */
import { runOps } from '../../ops/main.js';

export interface Run {
  code: number;
  out: string;
  err: string;
}

export async function ops(argv: string[], env: Record<string, string | undefined> = {}, now = Date.now): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runOps(argv, { out: (text) => out.push(text), err: (text) => err.push(text), env: { ...process.env, ...env }, now });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** The rows of a table as cells split on runs of two or more spaces (cells themselves hold single spaces at most). */
export const rowsOf = (table: string): string[][] =>
  table
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => line.split(/ {2,}/));
