/**
 * The input of a fenced write, checked before any request; every issue comes back in one
 * ValidationError (`fields`: the dotted field, a rule name, a message).
 *
 * A fencing token is a decimal integer string without sign or leading zeros ("0" alone), at most
 * what the sink keeps exactly (TOKEN_LIMITS), given as the string or as a lock handle (anything
 * with `fencingToken`).
 */
import { ValidationError } from '../errors.js';
import type { FieldIssueBody } from '../wire.js';
import { FENCED_TOMBSTONE_FIELD } from './tombstone.js';

/** A fencing token: the string itself, or what carries one (a `Lock` handle, a grant). */
export type FencingTokenSource = string | { readonly fencingToken: string };

const DECIMAL = /^(?:0|[1-9][0-9]*)$/;

/** The largest token a sink keeps exactly, and why. */
export interface TokenLimit {
  max: bigint;
  why: string;
}

export const TOKEN_LIMITS = {
  /** Elasticsearch and OpenSearch keep it as the document's version, a signed 64-bit integer. */
  elasticsearch: { max: 9_223_372_036_854_775_807n, why: 'the server keeps it as a 64-bit document version' },
  /** DynamoDB numbers hold 38 digits; S3 keeps the token as text, under the same bound so that one token fits both. */
  aws: { max: 10n ** 38n - 1n, why: 'a DynamoDB number holds 38 digits (S3 takes the same bound)' },
} satisfies Record<string, TokenLimit>;

/** Collects the issues of one request's input; `throwIfAny` ends the check. */
export class InputCheck {
  readonly issues: FieldIssueBody[] = [];

  add(field: string, rule: string, message: string): undefined {
    this.issues.push({ field, rule, message });
    return undefined;
  }

  /** The token `source` carries, or undefined (and an issue naming `field`). */
  token(source: unknown, field: string, limit: TokenLimit = TOKEN_LIMITS.elasticsearch): string | undefined {
    const token = typeof source === 'object' && source !== null && 'fencingToken' in source ? (source as { fencingToken: unknown }).fencingToken : source;
    if (token === undefined || token === null) return this.add(field, 'required', 'a fencing token is required (a string, or a lock handle)');
    if (typeof token !== 'string') return this.add(field, 'type', `must be a decimal integer string (a lock's fencingToken), not a ${typeof token}`);
    if (!DECIMAL.test(token)) {
      const shown = JSON.stringify(token.length > 40 ? `${token.slice(0, 40)}...` : token);
      return this.add(field, 'format', `must be a decimal integer string without sign or leading zeros ("0" alone), like a lock's fencingToken; got ${shown}`);
    }
    if (BigInt(token) > limit.max) return this.add(field, 'max', `must be at most ${limit.max} (${limit.why})`);
    return token;
  }

  /** An index name, id or routing: a non-empty string (optional ones may be undefined). */
  name(value: unknown, field: string, optional = false): void {
    if (optional && value === undefined) return;
    if (typeof value !== 'string' || value === '') this.add(field, 'required', 'must be a non-empty string');
  }

  /** A document or a partial one: a JSON object without the tombstone's reserved field. */
  document(value: unknown, field: string): void {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.add(field, 'type', 'must be an object (the document as JSON)');
    } else if (Object.hasOwn(value, FENCED_TOMBSTONE_FIELD)) {
      this.add(`${field}.${FENCED_TOMBSTONE_FIELD}`, 'not_allowed', `is reserved for the tombstones of fenced deletes (use fencedDelete)`);
    }
  }

  throwIfAny(): void {
    if (this.issues.length === 0) return;
    const summary = this.issues.map((issue) => `${issue.field}: ${issue.message}`).join('; ');
    throw new ValidationError({ fields: this.issues }, `Invalid fenced write: ${summary}`);
  }
}

/** The token of `source`: a ValidationError naming `field` when it is not one. */
export function fencingTokenOf(source: FencingTokenSource, field = 'fencingToken'): string {
  const check = new InputCheck();
  const token = check.token(source, field);
  check.throwIfAny();
  return token!;
}
