/** Zod's issues as the field issues a ValidationError carries: the field's dotted path and a stable rule name. */
import type { z } from 'zod';
import { type FieldIssue, ValidationError } from './errors.js';

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
  if (!result.success) throw new ValidationError({ fields: toFieldIssues(result.error, input) });
  return result.data;
}
