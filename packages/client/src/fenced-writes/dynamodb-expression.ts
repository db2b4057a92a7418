/**
 * The expressions of a fenced DynamoDB write: the fence condition (ANDed with the caller's own), and
 * the caller's update expression with the token set and the tombstone mark removed in it. The
 * caller's expressions must leave the helpers' attributes and placeholders alone (checked first).
 */
import { FENCED_TOMBSTONE_FIELD } from './tombstone.js';
import type { InputCheck } from './validate.js';

/** The attribute that keeps an item's fencing token, a DynamoDB number (N). */
export const FENCED_TOKEN_ATTRIBUTE = '_fencingToken';

/** The helpers' placeholders: the caller's expressions may not define them. */
export const TOKEN_NAME = '#fencedToken';
export const TOKEN_VALUE = ':fencedToken';
export const TOMBSTONE_NAME = '#fencedDeletedAt';
export const TOMBSTONE_VALUE = ':fencedDeletedAt';

const RESERVED_ATTRIBUTES = [FENCED_TOKEN_ATTRIBUTE, FENCED_TOMBSTONE_FIELD];

/** The write may land: no token on the item (absent, or never fenced), or one not newer than ours. */
export const FENCE_CONDITION = `(attribute_not_exists(${TOKEN_NAME}) OR ${TOKEN_NAME} <= ${TOKEN_VALUE})`;

/** The caller's expressions and their placeholders, as the SDK takes them. */
export interface CallerExpressions {
  ConditionExpression?: string | undefined;
  ExpressionAttributeNames?: Record<string, string> | undefined;
  ExpressionAttributeValues?: Record<string, object> | undefined;
}

/** A clause keyword of an update expression, not part of a placeholder or a path (the four are reserved words: never bare attribute names). */
const CLAUSE = /(?<![#:.\w])(SET|REMOVE|ADD|DELETE)(?![\w])/gi;

/** A bare top-level attribute name in an expression (not a placeholder, not a nested path element, not a function name before its parenthesis). */
const BARE_NAME = /(?<![#:.\w])[A-Za-z_][\w]*(?![\w(])/g;

/** Checks the caller's expressions: none defines the helpers' placeholders or names the token or the tombstone attribute. */
export function checkCallerExpressions(input: InputCheck, expressions: CallerExpressions & { UpdateExpression?: unknown }): void {
  const { ConditionExpression, ExpressionAttributeNames, ExpressionAttributeValues } = expressions;
  if (ConditionExpression !== undefined && (typeof ConditionExpression !== 'string' || ConditionExpression.trim() === '')) {
    input.add('ConditionExpression', 'type', 'must be a non-empty string when given');
  }
  for (const [field, map, ours] of [
    ['ExpressionAttributeNames', ExpressionAttributeNames, [TOKEN_NAME, TOMBSTONE_NAME]],
    ['ExpressionAttributeValues', ExpressionAttributeValues, [TOKEN_VALUE, TOMBSTONE_VALUE]],
  ] as const) {
    if (map === undefined) continue;
    if (typeof map !== 'object' || map === null || Array.isArray(map)) {
      input.add(field, 'type', 'must be an object when given');
      continue;
    }
    for (const placeholder of ours) {
      if (Object.hasOwn(map, placeholder))
        input.add(`${field}.${placeholder}`, 'reserved', 'is the fenced write helpers’ own placeholder: name yours otherwise');
    }
  }
  for (const [placeholder, name] of Object.entries(ExpressionAttributeNames ?? {})) {
    if (RESERVED_ATTRIBUTES.includes(name)) input.add(`ExpressionAttributeNames.${placeholder}`, 'reserved', reservedMessage(name));
  }
  for (const field of ['UpdateExpression', 'ConditionExpression'] as const) {
    const text = expressions[field];
    if (typeof text !== 'string') continue;
    for (const name of text.match(BARE_NAME) ?? []) {
      if (RESERVED_ATTRIBUTES.includes(name)) input.add(field, 'reserved', `names ${name}: ${reservedMessage(name)}`);
    }
  }
}

export const reservedMessage = (name: string): string =>
  name === FENCED_TOKEN_ATTRIBUTE
    ? `${FENCED_TOKEN_ATTRIBUTE} is the attribute that keeps the fencing token: only the helpers write it`
    : `${FENCED_TOMBSTONE_FIELD} marks the tombstones of fenced deletes: only the helpers write it (use fencedDeleteItem)`;

/** The condition sent: the fence, and the caller's own condition when there is one. */
export const conditionOf = (callerCondition: string | undefined): string =>
  callerCondition === undefined ? FENCE_CONDITION : `${FENCE_CONDITION} AND (${callerCondition})`;

/**
 * The caller's update expression with `#fencedToken = :fencedToken` added to its SET clause and the
 * tombstone mark to its REMOVE clause (each clause may appear only once, so they are merged in, or
 * added when absent): an update of a tombstone makes it an item again, as an update of no item does.
 */
export function fencedUpdateExpression(callerExpression: string): string {
  const starts = [...callerExpression.matchAll(CLAUSE)].map((match) => match.index);
  const clauses = starts.map((start, n) => {
    const text = callerExpression.slice(start, starts[n + 1] ?? callerExpression.length).trim();
    const keyword = text.match(/^\w+/)![0].toUpperCase();
    return { keyword, body: text.slice(keyword.length).trim() };
  });
  const additions: Array<[string, string]> = [
    ['SET', `${TOKEN_NAME} = ${TOKEN_VALUE}`],
    ['REMOVE', TOMBSTONE_NAME],
  ];
  for (const [keyword, addition] of additions) {
    const clause = clauses.find((each) => each.keyword === keyword);
    if (clause) clause.body = `${clause.body}, ${addition}`;
    else clauses.push({ keyword, body: addition });
  }
  // What precedes the first clause is blank in a valid expression; kept as it is, for the service to judge otherwise.
  const before = callerExpression.slice(0, starts[0] ?? callerExpression.length).trim();
  return [before, ...clauses.map(({ keyword, body }) => `${keyword} ${body}`)].filter((part) => part !== '').join(' ');
}
