/**
 * Request validation, done once at the edge: the handlers give these schemas to the Powertools
 * parser, and the engine trusts a request that went through them. Every rule has a name so that
 * errors say which field broke which rule; what differs per granularity lives in granularity/.
 */
import { z } from 'zod';
import { type FieldIssue, ValidationError } from './errors.js';
import { rulesFor } from './granularity/index.js';
import { checkText } from './granularity/text.js';
import type { AcquireRequest, LockTarget, RequestedMode } from './model.js';
import type { LockSettings } from './settings.js';

export const NAMESPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const REQUEST_ID_PATTERN = /^[\x21-\x7e]+$/;
const TARGET_FIELDS = ['ids', 'path'] as const;

type Limits = LockSettings['limits'];

function targetShape(limits: Limits) {
  return {
    namespace: z
      .string()
      .min(1)
      .max(limits.namespaceMax)
      .regex(NAMESPACE_PATTERN, { error: 'must start with a letter or digit and contain only letters, digits, ".", "_", ":" and "-"' }),
    granularity: z.enum(['global', 'document', 'tree']),
    ids: z.array(z.string().min(1)).min(1).max(limits.idsPerRequest).optional(),
    path: z.string().optional(),
  };
}

/** The granularity's own checks, and no target field of another granularity. */
function checkTarget(
  input: { granularity: LockTarget['granularity']; ids?: string[] | undefined; path?: string | undefined },
  ctx: z.core.$RefinementCtx<unknown>,
  limits: Limits,
): void {
  const rules = rulesFor(input.granularity);
  for (const field of TARGET_FIELDS) {
    if (!rules.fields.includes(field) && input[field] !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [field],
        message: `is only allowed for the ${field === 'ids' ? 'document' : 'tree'} granularity`,
        params: { rule: 'not_allowed' },
      });
    }
  }
  rules.check(input, ctx, limits);
}

/** A lock target alone (inspect, and the target inside an unsigned lease token). */
export function targetSchema(settings: Readonly<LockSettings>) {
  const { limits } = settings;
  return z
    .object({ ...targetShape(limits), mode: z.enum(['exclusive', 'shared']).default('exclusive') })
    .strict()
    .superRefine((input, ctx) => checkTarget(input, ctx, limits));
}

export function acquireSchema(settings: Readonly<LockSettings>) {
  const { limits, ttl } = settings;
  return z
    .object({
      ...targetShape(limits),
      mode: z.enum(['exclusive', 'shared']).default('exclusive'),
      owner: z.string().min(1).max(limits.ownerMax),
      ttlMs: z.number().int().min(ttl.minMs).max(ttl.maxMs).default(ttl.defaultMs),
      waitMs: z.number().int().min(0).max(settings.maxWaitMs).default(0),
      requestId: z.string().min(1).max(limits.requestIdMax).regex(REQUEST_ID_PATTERN, { error: 'must be printable ASCII without spaces' }).optional(),
    })
    .strict()
    .superRefine((input, ctx) => {
      checkText(ctx, ['owner'], input.owner, limits.ownerMax * 4);
      checkTarget(input, ctx, limits);
    });
}

export type AcquireInput = z.input<ReturnType<typeof acquireSchema>>;
export type ParsedAcquire = z.output<ReturnType<typeof acquireSchema>>;
export type ParsedTarget = z.output<ReturnType<typeof targetSchema>>;

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
    const rule =
      zodIssue.code === 'custom'
        ? String((zodIssue.params as { rule?: string } | undefined)?.rule ?? 'custom')
        : (RULE_BY_CODE[zodIssue.code] ?? zodIssue.code);
    return [{ field: field || '(body)', rule, message: zodIssue.message }];
  });
}

export function parseWith<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  if (!result.success) throw new ValidationError(undefined, { fields: toFieldIssues(result.error, input) });
  return result.data;
}

/** Requests and targets that went through `toAcquireRequest` / `toTarget`: the engine takes them as they are. */
const validated = new WeakSet<AcquireRequest>();
const validatedTargets = new WeakSet<LockTarget>();

export const isValidated = (request: AcquireRequest): boolean => validated.has(request);
export const isValidatedTarget = (target: LockTarget): boolean => validatedTargets.has(target);

/** The target of a parsed request (see targetSchema / acquireSchema), in its canonical form. */
export function toTarget(parsed: {
  namespace: string;
  granularity: LockTarget['granularity'];
  ids?: string[] | undefined;
  path?: string | undefined;
}): LockTarget {
  const target = rulesFor(parsed.granularity).target(parsed.namespace, parsed);
  validatedTargets.add(target);
  return target;
}

export function toAcquireRequest(parsed: ParsedAcquire): AcquireRequest {
  const request: AcquireRequest = {
    target: toTarget(parsed),
    mode: parsed.mode,
    owner: parsed.owner,
    ttlMs: parsed.ttlMs,
    waitMs: parsed.waitMs,
    ...(parsed.requestId !== undefined ? { requestId: parsed.requestId } : {}),
  };
  validated.add(request);
  return request;
}

/** The target as a request carries it (flat fields). */
export function targetFields(target: LockTarget): Record<string, unknown> {
  return { namespace: target.namespace, granularity: target.granularity, ...rulesFor(target.granularity).toFields(target) };
}

/** Schemas are built once per settings object (building one costs more than using it). */
function cached<T>(cache: WeakMap<object, T>, settings: Readonly<LockSettings>, build: (settings: Readonly<LockSettings>) => T): T {
  let schema = cache.get(settings);
  if (!schema) {
    schema = build(settings);
    cache.set(settings, schema);
  }
  return schema;
}
const acquireSchemas = new WeakMap<object, ReturnType<typeof acquireSchema>>();
const targetSchemas = new WeakMap<object, ReturnType<typeof targetSchema>>();
const renewSchemas = new WeakMap<object, ReturnType<typeof renewSchema>>();

/** For callers that hold raw input (a body, an event, or an AcquireRequest built in code): validates it once. */
export function parseAcquireRequest(input: unknown, settings: Readonly<LockSettings>): AcquireRequest {
  const raw = isAcquireRequestShape(input)
    ? {
        ...targetFields(input.target),
        mode: input.mode,
        owner: input.owner,
        ttlMs: input.ttlMs,
        waitMs: input.waitMs,
        ...(input.requestId !== undefined ? { requestId: input.requestId } : {}),
      }
    : input;
  return toAcquireRequest(parseWith(cached(acquireSchemas, settings, acquireSchema), raw));
}

export function parseTarget(input: unknown, settings: Readonly<LockSettings>): { target: LockTarget; mode: RequestedMode } {
  const parsed = parseWith(cached(targetSchemas, settings, targetSchema), input);
  return { target: toTarget(parsed), mode: parsed.mode };
}

function isAcquireRequestShape(input: unknown): input is AcquireRequest {
  return typeof input === 'object' && input !== null && 'target' in input;
}

export function parseRenew(input: unknown, settings: Readonly<LockSettings>): { leaseToken: string; ttlMs: number } {
  return parseWith(cached(renewSchemas, settings, renewSchema), input);
}

export function parseRelease(input: unknown): { leaseToken: string } {
  return parseWith(releaseSchema, input);
}
