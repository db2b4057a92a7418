/** From a lock target to the lock documents it needs, in the one order every caller uses. */
import { createHash } from 'node:crypto';
import { intentionMode, targetMode } from './compatibility.js';
import type { Granularity, LockTarget, PlannedKey, RequestedMode } from './model.js';

export const GLOBAL_KEY = '*';

const MAX_ID_BYTES = 512;
const TAG: Record<Granularity, string> = { global: 'g', document: 'd', tree: 't' };

/**
 * Document ids read `<namespace>|<g|d|t>|<key>`: namespaces cannot contain "|", so ids never collide
 * across namespaces or granularities, and ids that share a namespace share a prefix, which keeps
 * Lucene's id lookups cheap (random ids measured about twice as slow for create + delete). Keys too
 * long for Elasticsearch's 512-byte id limit use the upper-case tag and a SHA-256 of the key instead.
 */
export function lockDocId(namespace: string, granularity: Granularity, key: string): string {
  const readable = `${namespace}|${TAG[granularity]}|${key}`;
  if (Buffer.byteLength(readable, 'utf8') <= MAX_ID_BYTES) return readable;
  return `${namespace}|${TAG[granularity].toUpperCase()}|${createHash('sha256').update(key).digest('base64url')}`;
}

/** `/a/b/c` → `/a`, `/a/b` (the root is not a lock; see validation). */
export function ancestorsOf(path: string): string[] {
  const segments = path.slice(1).split('/');
  return segments.slice(0, -1).map((_, index) => `/${segments.slice(0, index + 1).join('/')}`);
}

export function planKeys(target: LockTarget, mode: RequestedMode): PlannedKey[] {
  const { namespace, granularity } = target;
  const plan = (key: string, holderMode: PlannedKey['mode']): PlannedKey => ({
    docId: lockDocId(namespace, granularity, key),
    namespace,
    granularity,
    key,
    mode: holderMode,
  });
  let keys: PlannedKey[];
  switch (target.granularity) {
    case 'global':
      keys = [plan(GLOBAL_KEY, targetMode(mode))];
      break;
    case 'document':
      keys = target.ids.map((id) => plan(id, targetMode(mode)));
      break;
    case 'tree':
      keys = [...ancestorsOf(target.path).map((ancestor) => plan(ancestor, intentionMode(mode))), plan(target.path, targetMode(mode))];
      break;
  }
  // Any total order shared by all callers prevents two partial sets from each waiting on the other.
  return keys.sort((a, b) => (a.docId < b.docId ? -1 : a.docId > b.docId ? 1 : 0));
}

export function describeTarget(target: LockTarget): string {
  switch (target.granularity) {
    case 'global':
      return `${target.namespace} (global)`;
    case 'document':
      return `${target.namespace} ids ${target.ids.length === 1 ? target.ids[0] : `[${target.ids.length}]`}`;
    case 'tree':
      return `${target.namespace} ${target.path}`;
  }
}
