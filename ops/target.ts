/**
 * A lock target as the operator writes it: one argument, NAMESPACE/GRANULARITY[/WHAT]
 *
 *   orders/global                 the namespace's global lock
 *   orders/document/o-1,o-2       documents o-1 and o-2 (ids separated by commas)
 *   orders/tree//a/b              the tree path /a/b (everything after "tree/", its leading slash included)
 *
 * or the same fields as flags (--namespace, --granularity, --ids a,b | --path /a/b), for names that
 * the short form cannot carry (an id with a comma). What follows the granularity is the field its
 * rules name targets with (packages/engine/src/granularity/); the service checks the fields' own rules.
 */

import type { Granularity, TargetBody, TargetField } from '../packages/client/src/wire.js';
import { granularityNames, rulesFor, TARGET_FIELD_NAMES } from '../packages/engine/src/granularity/index.js';
import { UsageError } from '../tools/cli/flags.js';

export type TargetFields = TargetBody;

/** How an operator writes each target field: in the short form (after the granularity) and as its flag. */
const FIELD_SYNTAX: {
  [F in TargetField]: {
    placeholder: string;
    /** The field from what follows the granularity in the short form; undefined when it does not read as one. */
    short(what: string): Pick<TargetBody, F> | undefined;
    shortHint(granularity: Granularity): string;
    /** The field from its flag's text; undefined when it does not read as one. */
    flag(text: string): Pick<TargetBody, F> | undefined;
    flagHint(granularity: Granularity): string;
  };
} = {
  ids: {
    placeholder: 'ID[,ID...]',
    short: idsIn,
    shortHint: (granularity) => `a ${granularity} target names its ids, e.g. orders/${granularity}/o-1,o-2`,
    flag: idsIn,
    flagHint: (granularity) => `needed with --granularity ${granularity}: ids separated by commas`,
  },
  path: {
    placeholder: 'PATH',
    short: (what) => (what.startsWith('/') ? { path: what } : undefined),
    shortHint: (granularity) => `a ${granularity} target names a path starting with "/", e.g. orders/${granularity}//a/b`,
    flag: (text) => ({ path: text }),
    flagHint: (granularity) => `needed with --granularity ${granularity}, e.g. /a/b`,
  },
};

/** `a,b` as ids; undefined when one is empty. */
function idsIn(text: string): { ids: string[] } | undefined {
  const ids = text.split(',');
  return ids.some((id) => id === '') ? undefined : { ids };
}

const fieldOf = (granularity: Granularity): TargetField | undefined => rulesFor(granularity).field;

/** `a, b or c` */
const alternatives = (words: string[]): string => (words.length > 1 ? `${words.slice(0, -1).join(', ')} or ${words.at(-1)}` : words.join(''));

const shortForm = (granularity: Granularity): string => {
  const field = fieldOf(granularity);
  return field === undefined ? `NAMESPACE/${granularity}` : `NAMESPACE/${granularity}/${FIELD_SYNTAX[field].placeholder}`;
};

export const TARGET_SYNTAX = `${alternatives(granularityNames().map(shortForm))} (e.g. orders/tree//a/b)`;

function granularityNamed(source: string, text: string): Granularity {
  const granularity = granularityNames().find((one) => one === text);
  if (!granularity) throw new UsageError(`${source}: the granularity must be ${granularityNames().join(', ')} (got "${text}")`);
  return granularity;
}

/** What follows the granularity: nothing, or the value of the field its targets are named by. */
function fieldsOf(source: string, granularity: Granularity, what: string | undefined): Pick<TargetFields, TargetField> {
  const field = fieldOf(granularity);
  if (field === undefined) {
    if (what !== undefined) throw new UsageError(`${source}: a ${granularity} target names nothing after "${granularity}" (got "/${what}")`);
    return {};
  }
  const syntax = FIELD_SYNTAX[field];
  const fields = what === undefined ? undefined : syntax.short(what);
  if (!fields) throw new UsageError(`${source}: ${syntax.shortHint(granularity)}`);
  return fields;
}

/** `orders/document/o-1,o-2` as its fields; a UsageError naming the argument and the syntax otherwise. */
export function parseTarget(text: string): TargetFields {
  const source = `target "${text}"`;
  const [namespace, granularityText, ...rest] = text.split('/');
  if (!namespace || granularityText === undefined || granularityText === '') throw new UsageError(`${source}: must be ${TARGET_SYNTAX}`);
  const granularity = granularityNamed(source, granularityText);
  return { namespace, granularity, ...fieldsOf(source, granularity, rest.length > 0 ? rest.join('/') : undefined) };
}

/** The target of the flags --namespace, --granularity, --ids, --path. */
export function targetFromFlags(flags: { namespace?: string; granularity?: string } & { [F in TargetField]?: string }): TargetFields {
  if (!flags.namespace) throw new UsageError(`--namespace: needed (or a target: ${TARGET_SYNTAX})`);
  if (!flags.granularity) throw new UsageError(`--granularity: needed with --namespace (${alternatives(granularityNames())})`);
  const granularity = granularityNamed('--granularity', flags.granularity);
  const field = fieldOf(granularity);
  for (const other of TARGET_FIELD_NAMES) {
    const takers = granularityNames().filter((name) => fieldOf(name) === other);
    if (other !== field && flags[other] !== undefined) throw new UsageError(`--${other}: only with --granularity ${takers.join(' or ')} (got ${granularity})`);
  }
  if (field === undefined) return { namespace: flags.namespace, granularity };
  const syntax = FIELD_SYNTAX[field];
  const text = flags[field];
  const fields = text === undefined ? undefined : syntax.flag(text);
  if (!fields) throw new UsageError(`--${field}: ${syntax.flagHint(granularity)}`);
  return { namespace: flags.namespace, granularity, ...fields };
}

/** The target written back in the short form, for headlines. */
export function targetText(target: { namespace: string; granularity: string; ids?: string[]; path?: string }): string {
  if (target.ids) return `${target.namespace}/${target.granularity}/${target.ids.join(',')}`;
  if (target.path !== undefined) return `${target.namespace}/${target.granularity}/${target.path}`;
  return `${target.namespace}/${target.granularity}`;
}
