/** The kit's one kind of user mistake: a flag, a --config file, a --paths or --trace file, an index. */
import type { z } from 'zod';
import { UsageError } from '../../tools/cli/flags.js';

/** A mistake in what the user asked for: printed as one line, without a stack trace; exit code 2. */
export class ConfigError extends UsageError {
  override name = 'ConfigError';
}

/** A zod failure as a ConfigError, one line per problem, each led by where it is (`label` names a path). */
export function configErrorFrom(error: z.ZodError, label: (path: string[]) => string): ConfigError {
  const lines = error.issues.map((issue) => `${label(issue.path.map(String))}: ${issue.message}`);
  return new ConfigError(lines.length === 1 ? lines[0]! : `invalid configuration:\n  - ${lines.join('\n  - ')}`);
}
