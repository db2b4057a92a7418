/** The id of a lock document. */
import { hash } from 'node:crypto';

const MAX_ID_BYTES = 512;

/** The tags of documents that are not locks (below): never a granularity's. */
const WORK_TAG = 'w';
const AUDIT_TAG = 'r';

/** Each granularity's tag, as its rules give it when it is registered (granularity/index.ts). */
const LOCK_TAGS = new Map<string, string>();

/** Ids of the granularity's lock documents carry `tag`: one lower-case letter, taken by nothing else (ids are kept in the lock index). */
export function tagLockDocuments(granularity: string, tag: string): void {
  const taken = [WORK_TAG, AUDIT_TAG, ...LOCK_TAGS.values()];
  if (!/^[a-z]$/.test(tag) || taken.includes(tag))
    throw new Error(`The ${granularity} granularity's documents need a lower-case letter that tags no others (${taken.join(', ')}); got "${tag}"`);
  LOCK_TAGS.set(granularity, tag);
}

/**
 * Document ids read `<namespace>|<g|d|t>|<key>`: namespaces cannot contain "|", so ids never collide
 * across namespaces or granularities, and ids that share a namespace share a prefix, which keeps
 * Lucene's id lookups cheap (random ids measured about twice as slow for create + delete). Keys too
 * long for Elasticsearch's 512-byte id limit use the upper-case tag and a SHA-256 of the key instead.
 */
export function lockDocId(namespace: string, granularity: string, key: string): string {
  const tag = LOCK_TAGS.get(granularity);
  if (tag === undefined) throw new Error(`No granularity ${granularity} is registered`);
  const readable = `${namespace}|${tag}|${key}`;
  if (Buffer.byteLength(readable, 'utf8') <= MAX_ID_BYTES) return readable;
  return `${namespace}|${tag.toUpperCase()}|${hash('sha256', key, 'base64url')}`;
}

/** The id of the document of the work an idempotency key names: its own tag, so never a lock's id. */
export const workDocId = (namespace: string, keyHash: string): string => `${namespace}|${WORK_TAG}|${keyHash}`;

/** The id of an operator's audit document (a revoke, a drain): its own tag, so never a lock's id. */
export const auditDocId = (namespace: string, id: string): string => `${namespace}|${AUDIT_TAG}|${id}`;
