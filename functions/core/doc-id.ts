/** The id of a lock document. */
import { hash } from 'node:crypto';
import type { Granularity } from './model.js';

const MAX_ID_BYTES = 512;
const TAGS: Readonly<Record<Granularity, string>> = { global: 'g', document: 'd', tree: 't' };

/**
 * Document ids read `<namespace>|<g|d|t>|<key>`: namespaces cannot contain "|", so ids never collide
 * across namespaces or granularities, and ids that share a namespace share a prefix, which keeps
 * Lucene's id lookups cheap (random ids measured about twice as slow for create + delete). Keys too
 * long for Elasticsearch's 512-byte id limit use the upper-case tag and a SHA-256 of the key instead.
 */
export function lockDocId(namespace: string, granularity: Granularity, key: string): string {
  const tag = TAGS[granularity];
  const readable = `${namespace}|${tag}|${key}`;
  if (Buffer.byteLength(readable, 'utf8') <= MAX_ID_BYTES) return readable;
  return `${namespace}|${tag.toUpperCase()}|${hash('sha256', key, 'base64url')}`;
}

/** The id of the document of the work an idempotency key names: its own tag, so never a lock's id. */
export const workDocId = (namespace: string, keyHash: string): string => `${namespace}|w|${keyHash}`;

/** The id of an operator's audit document (a revoke, a drain): its own tag, so never a lock's id. */
export const auditDocId = (namespace: string, id: string): string => `${namespace}|r|${id}`;
