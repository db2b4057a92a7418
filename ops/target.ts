/**
 * A lock target as the operator writes it: one argument, NAMESPACE/GRANULARITY[/WHAT]
 *
 *   orders/global                 the namespace's global lock
 *   orders/document/o-1,o-2       documents o-1 and o-2 (ids separated by commas)
 *   orders/tree//a/b              the tree path /a/b (everything after "tree/", its leading slash included)
 *
 * or the same fields as flags (--namespace, --granularity, --ids a,b | --path /a/b), for names that
 * the short form cannot carry (an id with a comma). The service checks the fields' own rules.
 */

import type { Granularity } from '../packages/client/src/wire.js';
import { UsageError } from '../tools/cli/flags.js';

export interface TargetFields {
  namespace: string;
  granularity: Granularity;
  ids?: string[];
  path?: string;
}

const GRANULARITIES: readonly Granularity[] = ['global', 'document', 'tree'];

export const TARGET_SYNTAX = 'NAMESPACE/global, NAMESPACE/document/ID[,ID...] or NAMESPACE/tree/PATH (e.g. orders/tree//a/b)';

function granularityNamed(source: string, text: string): Granularity {
  const granularity = GRANULARITIES.find((one) => one === text);
  if (!granularity) throw new UsageError(`${source}: the granularity must be ${GRANULARITIES.join(', ')} (got "${text}")`);
  return granularity;
}

/** What follows the granularity: nothing (global), the ids (document), the path (tree). */
function fieldsOf(source: string, granularity: Granularity, what: string | undefined): Pick<TargetFields, 'ids' | 'path'> {
  if (granularity === 'global') {
    if (what !== undefined) throw new UsageError(`${source}: a global target names nothing after "global" (got "/${what}")`);
    return {};
  }
  if (granularity === 'document') {
    const ids = (what ?? '').split(',');
    if (what === undefined || ids.some((id) => id === '')) throw new UsageError(`${source}: a document target names its ids, e.g. orders/document/o-1,o-2`);
    return { ids };
  }
  if (what === undefined || !what.startsWith('/')) throw new UsageError(`${source}: a tree target names a path starting with "/", e.g. orders/tree//a/b`);
  return { path: what };
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
export function targetFromFlags(flags: { namespace?: string; granularity?: string; ids?: string; path?: string }): TargetFields {
  if (!flags.namespace) throw new UsageError(`--namespace: needed (or a target: ${TARGET_SYNTAX})`);
  if (!flags.granularity) throw new UsageError('--granularity: needed with --namespace (global, document or tree)');
  const granularity = granularityNamed('--granularity', flags.granularity);
  if (granularity !== 'document' && flags.ids !== undefined) throw new UsageError(`--ids: only with --granularity document (got ${granularity})`);
  if (granularity !== 'tree' && flags.path !== undefined) throw new UsageError(`--path: only with --granularity tree (got ${granularity})`);
  if (granularity === 'document') {
    const ids = (flags.ids ?? '').split(',');
    if (flags.ids === undefined || ids.some((id) => id === '')) throw new UsageError('--ids: needed with --granularity document: ids separated by commas');
    return { namespace: flags.namespace, granularity, ids };
  }
  if (granularity === 'tree') {
    if (flags.path === undefined) throw new UsageError('--path: needed with --granularity tree, e.g. /a/b');
    return { namespace: flags.namespace, granularity, path: flags.path };
  }
  return { namespace: flags.namespace, granularity };
}

/** The target written back in the short form, for headlines. */
export function targetText(target: { namespace: string; granularity: string; ids?: string[]; path?: string }): string {
  if (target.ids) return `${target.namespace}/${target.granularity}/${target.ids.join(',')}`;
  if (target.path !== undefined) return `${target.namespace}/${target.granularity}/${target.path}`;
  return `${target.namespace}/${target.granularity}`;
}
