/** From a lock target to the lock documents it needs, in the one order every caller uses. */
import { hash } from 'node:crypto';
import { rulesFor } from './granularity/index.js';
import type { Granularity, LockTarget, PlannedKey, RequestedMode } from './model.js';

const MAX_ID_BYTES = 512;

/**
 * Document ids read `<namespace>|<g|d|t>|<key>`: namespaces cannot contain "|", so ids never collide
 * across namespaces or granularities, and ids that share a namespace share a prefix, which keeps
 * Lucene's id lookups cheap (random ids measured about twice as slow for create + delete). Keys too
 * long for Elasticsearch's 512-byte id limit use the upper-case tag and a SHA-256 of the key instead.
 */
export function lockDocId(namespace: string, granularity: Granularity, key: string): string {
  const tag = rulesFor(granularity).tag;
  const readable = `${namespace}|${tag}|${key}`;
  if (Buffer.byteLength(readable, 'utf8') <= MAX_ID_BYTES) return readable;
  return `${namespace}|${tag.toUpperCase()}|${hash('sha256', key, 'base64url')}`;
}

export function planKeys(target: LockTarget, mode: RequestedMode): PlannedKey[] {
  const { namespace, granularity } = target;
  const keys = rulesFor(granularity)
    .plan(target, mode)
    .map(({ key, mode: holderMode }): PlannedKey => ({ docId: lockDocId(namespace, granularity, key), namespace, granularity, key, mode: holderMode }));
  // Any total order shared by all callers prevents two partial sets from each waiting on the other.
  return keys.sort((a, b) => (a.docId < b.docId ? -1 : a.docId > b.docId ? 1 : 0));
}
