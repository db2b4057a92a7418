/** Checks shared by the granularities for the text that names a lock (ids, path segments). */
import type { RefineContext } from './rules.js';

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's job.
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Log keys stay short: a request may name 500 ids. */
export const LOG_KEY_CHARS = 200;

export const utf8Bytes = (value: string): number => Buffer.byteLength(value, 'utf8');

export function issue(ctx: RefineContext, path: Array<string | number>, rule: string, message: string): void {
  ctx.addIssue({ code: 'custom', path, message, params: { rule } });
}

/** Text that must survive as UTF-8 and as part of a JSON document, e.g. ids, owners, path segments. */
export function checkText(ctx: RefineContext, path: Array<string | number>, value: string, maxBytes: number): void {
  if (LONE_SURROGATE.test(value)) issue(ctx, path, 'well_formed_unicode', 'must be well-formed Unicode (no lone surrogates)');
  if (CONTROL_CHARACTERS.test(value)) issue(ctx, path, 'no_control_characters', 'must not contain control characters');
  if (utf8Bytes(value) > maxBytes) issue(ctx, path, 'too_long', `must be at most ${maxBytes} bytes of UTF-8`);
}

/**
 * Ids and paths lock by their Unicode NFC form: "é" typed as one code point or as "e" plus a combining
 * accent is one lock. Two spellings of one name must never be two locks; the cost is that two data
 * ids differing only in normalisation share a lock, which is safe.
 */
export const toNfc = (value: string): string => (LONE_SURROGATE.test(value) ? value : value.normalize('NFC'));
