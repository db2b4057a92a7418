/**
 * Work named by its event: the idempotency key and the payload read from the event, and the
 * payload's hash, computed one way for every caller. The client (using(), acquireOnce) computes them
 * here before it sends an acquire; the service does the same for an acquire that carries the event
 * itself (`event` + `eventKeyPath`). So a key and a hash mean the same whichever side made them.
 *
 * A path is the part of JMESPath that names one value: identifiers joined by dots (`detail.orderId`),
 * quoted identifiers for other names (`detail."order-id"`, with JSON string escapes), and array
 * indexes, negative ones from the end (`Records[0].messageId`, `items[-1]`). No wildcards,
 * projections, filters or functions: give the client a function for anything else.
 */
import { createHash } from 'node:crypto';
import type { FieldIssueBody } from './errors-catalogue.js';

/** A step of a path: an object's field, or an array's index. */
export type PathStep = { field: string } | { index: number };

/** The longest path taken (characters). */
export const EVENT_PATH_MAX = 256;

/** What a payload hash may be (the service's rule `payloadHash:format`): the client's is 43 base64url characters of SHA-256. */
export const PAYLOAD_HASH_PATTERN = /^[A-Za-z0-9_=+/-]{1,128}$/;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*/;
const INDEX = /^\[(-?\d{1,9})\]/;

/** The steps of `path`, or why it is not a path of this subset. */
export function parseEventPath(path: string): PathStep[] | { problem: string } {
  if (path.length === 0) return { problem: 'is empty' };
  if (path.length > EVENT_PATH_MAX) return { problem: `is ${path.length} characters, above ${EVENT_PATH_MAX}` };
  const steps: PathStep[] = [];
  let rest = path;
  let expectField = true;
  while (rest.length > 0) {
    const index = INDEX.exec(rest);
    if (index) {
      steps.push({ index: Number(index[1]) });
      rest = rest.slice(index[0].length);
      expectField = false;
      continue;
    }
    if (!expectField) {
      if (!rest.startsWith('.')) return { problem: `has "${rest[0]}" at ${path.length - rest.length} where "." or "[" was expected` };
      rest = rest.slice(1);
      expectField = true;
      if (rest.length === 0) return { problem: 'ends with "."' };
      continue;
    }
    const field = fieldAt(rest);
    if ('problem' in field) return { problem: `${field.problem} at ${path.length - rest.length}` };
    steps.push({ field: field.name });
    rest = rest.slice(field.length);
    expectField = false;
  }
  return steps;
}

function fieldAt(text: string): { name: string; length: number } | { problem: string } {
  const plain = IDENTIFIER.exec(text);
  if (plain) return { name: plain[0], length: plain[0].length };
  if (!text.startsWith('"')) return { problem: 'needs a name (letters, digits, "_"; quote any other)' };
  // A JSON string: its end is the first quote not escaped.
  for (let end = 1; end < text.length; end++) {
    if (text[end] === '\\') end++;
    else if (text[end] === '"') {
      try {
        const name = JSON.parse(text.slice(0, end + 1)) as string;
        return name === '' ? { problem: 'has an empty quoted name' } : { name, length: end + 1 };
      } catch {
        return { problem: 'has a quoted name that is not a JSON string' };
      }
    }
  }
  return { problem: 'has a quoted name without its closing quote' };
}

/** The value `steps` lead to in `event`, or undefined where one of them finds nothing. */
export function valueAtPath(event: unknown, steps: readonly PathStep[]): unknown {
  let value = event;
  for (const step of steps) {
    if ('index' in step) {
      if (!Array.isArray(value)) return undefined;
      value = value[step.index < 0 ? value.length + step.index : step.index];
    } else {
      if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, step.field)) return undefined;
      value = (value as Record<string, unknown>)[step.field];
    }
  }
  return value;
}

/**
 * An idempotency key as found in an event: a non-empty string as it is, a finite number as its JSON
 * text. Nothing there (undefined, null, an empty string) is no key; anything else (an object, an
 * array, a boolean) cannot name work.
 */
export function keyFromValue(value: unknown): { key: string } | { missing: true } | { problem: string } {
  if (value === undefined || value === null || value === '') return { missing: true };
  if (typeof value === 'string') return { key: value };
  if (typeof value === 'number' && Number.isFinite(value)) return { key: JSON.stringify(value) };
  return { problem: `leads to ${Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`}, not a string or a number` };
}

/**
 * The canonical JSON text of a value: object fields in the order of their names (JavaScript's sort, by UTF-16 code units), no
 * whitespace, fields whose value is undefined left out (as JSON.stringify does). Undefined: not
 * JSON (a bigint, a function, a cycle, a number that is not finite).
 */
export function canonicalJson(value: unknown): string | undefined {
  const seen = new Set<object>();
  const write = (item: unknown): string | undefined => {
    if (item === null || typeof item === 'string' || typeof item === 'boolean') return JSON.stringify(item);
    if (typeof item === 'number') return Number.isFinite(item) ? JSON.stringify(item) : undefined;
    if (typeof item !== 'object' || seen.has(item)) return undefined;
    seen.add(item);
    let text: string | undefined;
    if (Array.isArray(item)) {
      const parts = item.map((element) => (element === undefined ? 'null' : write(element)));
      text = parts.includes(undefined) ? undefined : `[${parts.join(',')}]`;
    } else {
      const plain = typeof (item as { toJSON?: unknown }).toJSON === 'function' ? (item as { toJSON: () => unknown }).toJSON() : item;
      if (plain !== item) {
        seen.delete(item);
        return write(plain);
      }
      const fields: string[] = [];
      for (const name of Object.keys(item).sort()) {
        const field = (item as Record<string, unknown>)[name];
        if (field === undefined) continue;
        const written = write(field);
        if (written === undefined) {
          fields.length = 0;
          seen.delete(item);
          return undefined;
        }
        fields.push(`${JSON.stringify(name)}:${written}`);
      }
      text = `{${fields.join(',')}}`;
    }
    seen.delete(item);
    return text;
  };
  return write(value);
}

/** The payload hash of a JSON text (canonicalJson's): SHA-256, base64url. */
export function payloadHashOfJson(json: string): string {
  return createHash('sha256').update(json, 'utf8').digest('base64url');
}

/** The payload's hash as every caller computes it, or undefined when the payload is not JSON. */
export function payloadHashOf(payload: unknown): string | undefined {
  const json = canonicalJson(payload);
  return json === undefined ? undefined : payloadHashOfJson(json);
}

/** A short prefix of a payload hash, for errors and logs. */
export const hashPrefix = (hash: string): string => hash.slice(0, 8);

/** Where a value is in the event: a path of the subset above, or a function of the event (the client's). */
export type EventLocator = string | ((event: unknown) => unknown);

export interface EventWorkOptions {
  /** Where the key is. */
  eventKeyPath: EventLocator;
  /** The part of the event whose hash is checked on a redelivery; the whole event when left out. */
  payloadPath?: EventLocator | undefined;
  /** No key at `eventKeyPath` is an error (rule `no_key`); else the call runs without a record. */
  throwOnNoKey?: boolean | undefined;
  /** The longest key (the service's limits.idempotencyKeyMax); unchecked when left out. */
  keyMax?: number | undefined;
}

/**
 * The key and the payload hash of an event. `missingKeyPath`: no key there (and `throwOnNoKey` was
 * not asked): the call runs without a record. `issues`: what is wrong, each naming its field and
 * rule; nothing else counts when there are any.
 */
export type EventWork = { key: string; payloadHash: string } | { missingKeyPath: string } | { issues: FieldIssueBody[] };

const locatorName = (locator: EventLocator): string => (typeof locator === 'string' ? locator : 'the function given');

function locate(event: unknown, locator: EventLocator, field: string): { value: unknown } | { issue: FieldIssueBody } {
  if (typeof locator === 'function') return { value: locator(event) };
  const steps = parseEventPath(locator);
  if ('problem' in steps) return { issue: { field, rule: 'path', message: `${steps.problem} (paths: names joined by ".", quoted names, [index])` } };
  return { value: valueAtPath(event, steps) };
}

/** The idempotency key at `eventKeyPath`: found, none there (`missingKeyPath`, unless `throwOnNoKey`), or what is wrong. */
export function keyFromEvent(
  event: unknown,
  options: Pick<EventWorkOptions, 'eventKeyPath' | 'throwOnNoKey' | 'keyMax'>,
): { key: string } | { missingKeyPath: string } | { issues: FieldIssueBody[] } {
  const at = locate(event, options.eventKeyPath, 'eventKeyPath');
  if ('issue' in at) return { issues: [at.issue] };
  const found = keyFromValue(at.value);
  const issue = (rule: string, message: string) => ({ issues: [{ field: 'eventKeyPath', rule, message }] });
  if ('problem' in found) return issue('not_a_key', found.problem);
  if ('missing' in found) {
    const path = locatorName(options.eventKeyPath);
    return options.throwOnNoKey ? issue('no_key', `finds no key in the event (nothing at ${path}), and throwOnNoKey is set`) : { missingKeyPath: path };
  }
  if (options.keyMax !== undefined && found.key.length > options.keyMax)
    return issue('max', `leads to a key of ${found.key.length} characters, above ${options.keyMax}`);
  return found;
}

/** The hash of the event, or of its part at `payloadPath` (which must find something). */
export function payloadHashFromEvent(event: unknown, payloadPath?: EventLocator): { payloadHash: string } | { issues: FieldIssueBody[] } {
  const at = payloadPath === undefined ? { value: event } : locate(event, payloadPath, 'payloadPath');
  if ('issue' in at) return { issues: [at.issue] };
  if (at.value === undefined && payloadPath !== undefined)
    return { issues: [{ field: 'payloadPath', rule: 'not_found', message: `finds nothing in the event at ${locatorName(payloadPath)}` }] };
  const payloadHash = payloadHashOf(at.value);
  if (payloadHash === undefined)
    return { issues: [{ field: payloadPath === undefined ? 'event' : 'payloadPath', rule: 'json', message: 'must be a JSON value' }] };
  return { payloadHash };
}

/** The work an event names: its key and its payload hash together (keyFromEvent, payloadHashFromEvent). */
export function workFromEvent(event: unknown, options: EventWorkOptions): EventWork {
  const key = keyFromEvent(event, options);
  const payload = payloadHashFromEvent(event, options.payloadPath);
  const issues = [...('issues' in key ? key.issues : []), ...('issues' in payload ? payload.issues : [])];
  if (issues.length > 0) return { issues };
  if ('missingKeyPath' in key) return key;
  return { key: (key as { key: string }).key, payloadHash: (payload as { payloadHash: string }).payloadHash };
}
