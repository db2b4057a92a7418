/**
 * Input schemas of the read-only and maintenance functions (acquire, renew and release use the
 * core's own). The engine validates targets in depth (paths, id sizes); these fix the shape.
 */
import { z } from 'zod';
import { NAMESPACE_PATTERN } from '../core/validation.js';
import type { HttpRequest } from './handler.js';

const granularity = z.enum(['global', 'document', 'tree']);

export const inspectSchema = z
  .object({
    namespace: z.string().min(1),
    granularity,
    ids: z.array(z.string().min(1)).min(1).optional(),
    path: z.string().optional(),
    mode: z.enum(['exclusive', 'shared']).default('exclusive'),
  })
  .strict();

export const listSchema = z
  .object({
    namespace: z.string().min(1).max(64).regex(NAMESPACE_PATTERN, { error: 'is not a valid namespace' }).optional(),
    granularity: granularity.optional(),
    owner: z.string().min(1).max(128).optional(),
    pathPrefix: z.string().startsWith('/', { error: 'must start with "/"' }).max(2_048).optional(),
    limit: z.number().int().min(1).max(1_000).default(100),
    includeExpired: z.boolean().default(false),
  })
  .strict();

export const sweepSchema = z
  .object({
    batchSize: z.number().int().min(1).max(10_000).optional(),
    maxBatches: z.number().int().min(1).max(1_000).optional(),
  })
  .strict();

/** Query strings as typed input: repeated `id` (or comma-separated `ids`) become `ids`; numbers and booleans are read as such. */
export function queryInput(request: HttpRequest, numeric: readonly string[] = [], booleans: readonly string[] = []): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const ids: string[] = [];
  for (const [name, value] of request.query) {
    if (name === 'id') ids.push(value);
    else if (name === 'ids') ids.push(...value.split(',').filter((id) => id !== ''));
    else if (numeric.includes(name)) input[name] = /^-?\d+$/.test(value) ? Number(value) : value;
    else if (booleans.includes(name)) input[name] = value === 'true' ? true : value === 'false' ? false : value;
    else input[name] = value;
  }
  if (ids.length > 0) input.ids = ids;
  return input;
}
