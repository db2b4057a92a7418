/**
 * Request validation, shared by the engine and the handlers (the handlers give these schemas to the
 * Powertools parser). Every rule has a name so that errors say which field broke which rule.
 */
import { z } from 'zod';
import { ValidationError, type FieldIssue } from './errors.js';
import type { AcquireRequest, LockTarget } from './model.js';
import type { LockSettings } from './settings.js';

const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
export const NAMESPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const REQUEST_ID_PATTERN = /^[\x21-\x7e]+$/;

/**
 * Ids and paths lock by their Unicode NFC form: "é" typed as one code point or as "e" plus a combining
 * accent is one lock. Two spellings of one name must never be two locks; the cost is that two data
 * ids differing only in normalisation share a lock, which is safe.
 */
const toNfc = (value: string): string => (LONE_SURROGATE.test(value) ? value : value.normalize('NFC'));

const utf8Bytes = (value: string): number => Buffer.byteLength(value, 'utf8');

type RefineContext = z.core.$RefinementCtx<unknown>;

function issue(ctx: RefineContext, path: Array<string | number>, rule: string, message: string): void {
  ctx.addIssue({ code: 'custom', path, message, params: { rule } });
}

/** Text that must survive as UTF-8 and as part of a JSON document, e.g. ids, owners, path segments. */
function checkText(ctx: RefineContext, path: Array<string | number>, value: string, maxBytes: number): void {
  if (LONE_SURROGATE.test(value)) issue(ctx, path, 'well_formed_unicode', 'must be well-formed Unicode (no lone surrogates)');
  if (CONTROL_CHARACTERS.test(value)) issue(ctx, path, 'no_control_characters', 'must not contain control characters');
  if (utf8Bytes(value) > maxBytes) issue(ctx, path, 'too_long', `must be at most ${maxBytes} bytes of UTF-8`);
}

export function checkPath(ctx: RefineContext, path: Array<string | number>, value: string, limits: LockSettings['limits']): void {
  if (!value.startsWith('/')) return issue(ctx, path, 'absolute_path', 'must be an absolute path starting with "/"');
  if (value === '/') return issue(ctx, path, 'not_root', 'the root "/" cannot be locked on its own; use the global granularity');
  if (value.endsWith('/')) return issue(ctx, path, 'no_trailing_slash', 'must not end with "/"');
  if (utf8Bytes(value) > limits.pathBytes) return issue(ctx, path, 'too_long', `must be at most ${limits.pathBytes} bytes of UTF-8`);
  const segments = value.slice(1).split('/');
  if (segments.length > limits.pathDepth) return issue(ctx, path, 'too_deep', `must have at most ${limits.pathDepth} segments`);
  for (const segment of segments) {
    if (segment === '') return issue(ctx, path, 'no_empty_segments', 'must not contain empty segments ("//")');
    if (segment === '.' || segment === '..') return issue(ctx, path, 'no_dot_segments', 'must not contain "." or ".." segments');
    if (utf8Bytes(segment) > limits.segmentBytes) {
      return issue(ctx, path, 'segment_too_long', `each segment must be at most ${limits.segmentBytes} bytes of UTF-8`);
    }
  }
  checkText(ctx, path, value, limits.pathBytes);
}

export function acquireSchema(settings: Readonly<LockSettings>) {
  const { limits, ttl } = settings;
  return z
    .object({
      namespace: z
        .string()
        .min(1)
        .max(limits.namespaceMax)
        .regex(NAMESPACE_PATTERN, { error: 'must start with a letter or digit and contain only letters, digits, ".", "_", ":" and "-"' }),
      granularity: z.enum(['global', 'document', 'tree']),
      ids: z.array(z.string().min(1)).min(1).max(limits.idsPerRequest).optional(),
      path: z.string().optional(),
      mode: z.enum(['exclusive', 'shared']).default('exclusive'),
      owner: z.string().min(1).max(limits.ownerMax),
      ttlMs: z.number().int().min(ttl.minMs).max(ttl.maxMs).default(ttl.defaultMs),
      waitMs: z.number().int().min(0).max(settings.maxWaitMs).default(0),
      requestId: z
        .string()
        .min(1)
        .max(limits.requestIdMax)
        .regex(REQUEST_ID_PATTERN, { error: 'must be printable ASCII without spaces' })
        .optional(),
    })
    .strict()
    .superRefine((input, ctx) => {
      checkText(ctx, ['owner'], input.owner, limits.ownerMax * 4);
      if (input.granularity === 'document') {
        if (!input.ids) issue(ctx, ['ids'], 'required', 'is required for the document granularity');
        if (input.path !== undefined) issue(ctx, ['path'], 'not_allowed', 'is only allowed for the tree granularity');
        const seen = new Set<string>();
        input.ids?.forEach((id, index) => {
          checkText(ctx, ['ids', index], id, limits.idBytes);
          const normalized = toNfc(id);
          if (seen.has(normalized)) issue(ctx, ['ids', index], 'unique', normalized === id ? 'duplicates an earlier id' : 'duplicates an earlier id once both are in Unicode NFC');
          seen.add(normalized);
        });
      } else if (input.granularity === 'tree') {
        if (input.path === undefined) issue(ctx, ['path'], 'required', 'is required for the tree granularity');
        else checkPath(ctx, ['path'], input.path, limits);
        if (input.ids !== undefined) issue(ctx, ['ids'], 'not_allowed', 'is only allowed for the document granularity');
      } else {
        if (input.ids !== undefined) issue(ctx, ['ids'], 'not_allowed', 'is only allowed for the document granularity');
        if (input.path !== undefined) issue(ctx, ['path'], 'not_allowed', 'is only allowed for the tree granularity');
      }
    });
}

export type AcquireInput = z.input<ReturnType<typeof acquireSchema>>;
export type ParsedAcquire = z.output<ReturnType<typeof acquireSchema>>;

export function renewSchema(settings: Readonly<LockSettings>) {
  return z
    .object({
      leaseToken: z.string().min(1).max(1_000_000),
      ttlMs: z.number().int().min(settings.ttl.minMs).max(settings.ttl.maxMs).default(settings.ttl.defaultMs),
    })
    .strict();
}

export const releaseSchema = z.object({ leaseToken: z.string().min(1).max(1_000_000) }).strict();

const RULE_BY_CODE: Record<string, string> = {
  invalid_type: 'type',
  too_small: 'min',
  too_big: 'max',
  invalid_format: 'format',
  invalid_value: 'one_of',
  unrecognized_keys: 'unknown_field',
  not_multiple_of: 'multiple_of',
};

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  return path.reduce<unknown>((value, key) => (typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined), input);
}

/** Zod issues as field issues: `field` is the dotted path, `rule` a stable name. Pass the input to tell missing fields from mistyped ones. */
export function toFieldIssues(error: z.ZodError, input?: unknown): FieldIssue[] {
  return error.issues.flatMap((zodIssue): FieldIssue[] => {
    const field = zodIssue.path.map(String).join('.');
    if (zodIssue.code === 'unrecognized_keys') {
      return zodIssue.keys.map((key) => ({
        field: field ? `${field}.${key}` : key,
        rule: 'unknown_field',
        message: 'is not a known field',
      }));
    }
    if (zodIssue.code === 'invalid_type' && valueAt(input, zodIssue.path) === undefined) {
      return [{ field: field || '(body)', rule: 'required', message: 'is required' }];
    }
    const rule = zodIssue.code === 'custom' ? String((zodIssue.params as { rule?: string } | undefined)?.rule ?? 'custom') : (RULE_BY_CODE[zodIssue.code] ?? zodIssue.code);
    return [{ field: field || '(body)', rule, message: zodIssue.message }];
  });
}

export function parseWith<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  if (!result.success) throw new ValidationError(toFieldIssues(result.error, input));
  return result.data;
}


export function toAcquireRequest(parsed: ParsedAcquire): AcquireRequest {
  const target: LockTarget =
    parsed.granularity === 'global'
      ? { namespace: parsed.namespace, granularity: 'global' }
      : parsed.granularity === 'document'
        ? { namespace: parsed.namespace, granularity: 'document', ids: (parsed.ids ?? []).map(toNfc) }
        : { namespace: parsed.namespace, granularity: 'tree', path: toNfc(parsed.path ?? '') };
  return {
    target,
    mode: parsed.mode,
    owner: parsed.owner,
    ttlMs: parsed.ttlMs,
    waitMs: parsed.waitMs,
    ...(parsed.requestId !== undefined ? { requestId: parsed.requestId } : {}),
  };
}

export function validateAcquire(input: unknown, settings: Readonly<LockSettings>): AcquireRequest {
  return toAcquireRequest(parseWith(acquireSchema(settings), input));
}
