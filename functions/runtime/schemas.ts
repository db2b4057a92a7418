/**
 * Input schemas of list and the sweeper (acquire, renew, release and inspect use the core's own),
 * with the engine's limits.
 */
import { z } from 'zod';
import type { LockSettings } from '../core/settings.js';
import { NAMESPACE_PATTERN } from '../core/validation.js';

export function listSchema({ limits }: Readonly<LockSettings>) {
  return z
    .object({
      namespace: z.string().min(1).max(limits.namespaceMax).regex(NAMESPACE_PATTERN, { error: 'is not a valid namespace' }).optional(),
      granularity: z.enum(['global', 'document', 'tree']).optional(),
      owner: z.string().min(1).max(limits.ownerMax).optional(),
      pathPrefix: z.string().startsWith('/', { error: 'must start with "/"' }).max(limits.pathBytes).optional(),
      limit: z.number().int().min(1).max(1_000).default(100),
      includeExpired: z.boolean().default(false),
    })
    .strict();
}

export const sweepSchema = z
  .object({
    batchSize: z.number().int().min(1).max(10_000).optional(),
    maxBatches: z.number().int().min(1).max(1_000).optional(),
  })
  .strict();

/** Query strings as typed input: repeated `id` (or comma-separated `ids`) become `ids`; numbers and booleans are read as such. */
export function queryInput(query: URLSearchParams, numeric: readonly string[] = [], booleans: readonly string[] = []): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const ids: string[] = [];
  for (const [name, value] of query) {
    if (name === 'id') ids.push(value);
    else if (name === 'ids') ids.push(...value.split(',').filter((id) => id !== ''));
    else if (numeric.includes(name)) input[name] = /^-?\d+$/.test(value) ? Number(value) : value;
    else if (booleans.includes(name)) input[name] = value === 'true' ? true : value === 'false' ? false : value;
    else input[name] = value;
  }
  if (ids.length > 0) input.ids = ids;
  return input;
}
