/**
 * Document locks: one or many ids of a namespace, taken all or nothing. Each is an intention on the
 * namespace's root (its global lock), read after the ids are written, never written (scope.ts).
 */
import { targetMode } from '../compatibility.js';
import { ROOT } from './global.js';
import type { GranularityRules } from './rules.js';
import { confirmScope, scopeHold } from './scope.js';
import { checkText, issue, LOG_KEY_CHARS, toNfc } from './text.js';

export interface DocumentTarget {
  namespace: string;
  granularity: 'document';
  ids: string[];
}

export const documentRules: GranularityRules<DocumentTarget> = {
  name: 'document',
  tag: 'd',
  field: 'ids',
  check(input, ctx, limits) {
    if (!input.ids) return issue(ctx, ['ids'], 'required', 'is required for the document granularity');
    const seen = new Set<string>();
    input.ids.forEach((id, index) => {
      checkText(ctx, ['ids', index], id, limits.idBytes);
      const normalized = toNfc(id);
      if (seen.has(normalized))
        issue(ctx, ['ids', index], 'unique', normalized === id ? 'duplicates an earlier id' : 'duplicates an earlier id once both are in Unicode NFC');
      seen.add(normalized);
    });
  },
  target: (namespace, input) => ({ namespace, granularity: 'document', ids: (input.ids ?? []).map(toNfc) }),
  plan: (target, mode) => target.ids.map((id) => ({ key: id, mode: targetMode(mode) })),
  guards: () => [ROOT],
  // An id has nothing below it.
  below: () => undefined,
  confirm: (context, held) => confirmScope(context, scopeHold(context, held, documentRules.describe(held.target), [ROOT])),
  toFields: (target) => ({ ids: [...target.ids] }),
  identity: (target) => JSON.stringify([...target.ids].sort()),
  describe: (target) => `${target.namespace} ids ${target.ids.length === 1 ? target.ids[0] : `[${target.ids.length}]`}`,
  logKey(fields) {
    const joined = (fields.ids ?? []).join(',');
    return joined.length > LOG_KEY_CHARS ? `${joined.slice(0, LOG_KEY_CHARS)}…(${fields.ids!.length} ids)` : joined;
  },
};
