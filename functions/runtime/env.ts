/** zod building blocks for environment variables: every value is a string, and a blank one counts as unset. */
import { z } from 'zod';

export const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const blankAsUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

export const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankAsUndefined, schema.optional());

/** Comma-separated http(s) URLs (spaces around the commas allowed), at least one. */
export const urlList = (error: string) =>
  z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((url) => url.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url({ protocol: /^https?$/, error })).min(1));
