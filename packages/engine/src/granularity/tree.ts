/**
 * Tree locks over slash-separated paths: the requested mode on the path covers everything below it.
 * A lock writes only its own path's document; it meets locks above it (its ancestors, and the
 * namespace's global lock at the root) and below it by reading after that write (scope.ts,
 * docs/tree-locks.md), so writers that share a directory never contend.
 */
import { targetMode } from '../compatibility.js';
import { ROOT } from './global.js';
import type { Above, GranularityRules } from './rules.js';
import { confirmScope, scopeHold } from './scope.js';
import { checkText, issue, LOG_KEY_CHARS, toNfc, utf8Bytes } from './text.js';

export interface TreeTarget {
  namespace: string;
  granularity: 'tree';
  path: string;
}

/** `/a/b/c` → `/a`, `/a/b` (the root above them is the namespace's global lock). */
export function ancestorsOf(path: string): string[] {
  const segments = path.slice(1).split('/');
  return segments.slice(0, -1).map((_, index) => `/${segments.slice(0, index + 1).join('/')}`);
}

const above = (path: string): Above[] => [...ancestorsOf(path).map((key) => ({ granularity: treeRules.name, key })), ROOT];

export const treeRules: GranularityRules<TreeTarget> = {
  name: 'tree',
  tag: 't',
  field: 'path',
  check(input, ctx, limits) {
    const path = input.path;
    if (path === undefined) return issue(ctx, ['path'], 'required', 'is required for the tree granularity');
    const at = ['path'];
    if (!path.startsWith('/')) return issue(ctx, at, 'absolute_path', 'must be an absolute path starting with "/"');
    if (path === '/')
      return issue(ctx, at, 'not_root', 'the root "/" is the namespace itself: lock it with the global granularity, which covers every path and id in it');
    if (path.endsWith('/')) return issue(ctx, at, 'no_trailing_slash', 'must not end with "/"');
    if (utf8Bytes(path) > limits.pathBytes) return issue(ctx, at, 'too_long', `must be at most ${limits.pathBytes} bytes of UTF-8`);
    const segments = path.slice(1).split('/');
    if (segments.length > limits.pathDepth) return issue(ctx, at, 'too_deep', `must have at most ${limits.pathDepth} segments`);
    for (const segment of segments) {
      if (segment === '') return issue(ctx, at, 'no_empty_segments', 'must not contain empty segments ("//")');
      if (segment === '.' || segment === '..') return issue(ctx, at, 'no_dot_segments', 'must not contain "." or ".." segments');
      if (utf8Bytes(segment) > limits.segmentBytes)
        return issue(ctx, at, 'segment_too_long', `each segment must be at most ${limits.segmentBytes} bytes of UTF-8`);
    }
    checkText(ctx, at, path, limits.pathBytes);
  },
  target: (namespace, input) => ({ namespace, granularity: 'tree', path: toNfc(input.path ?? '') }),
  plan: (target, mode) => [{ key: target.path, mode: targetMode(mode) }],
  guards: (target) => above(target.path),
  // Below a path: the paths under it (its own key is not below it, hence the slash).
  below: (path) => ({ granularities: [treeRules.name], keyPrefix: `${path}/` }),
  confirm: (context, held) =>
    confirmScope(context, scopeHold(context, held, `${held.target.namespace} ${held.target.path}`, above(held.target.path), { path: held.target.path })),
  toFields: (target) => ({ path: target.path }),
  identity: (target) => target.path,
  describe: (target) => `${target.namespace} ${target.path}`,
  logKey: (fields) => (fields.path ?? '').slice(0, LOG_KEY_CHARS),
};
