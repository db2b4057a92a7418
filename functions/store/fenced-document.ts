/**
 * Fencing that Elasticsearch enforces for a document written under a lock: the write carries the
 * grant's fencing token as an external version (`version_type: external_gte`), so Elasticsearch
 * refuses a write whose token is older than the one the document already has. A holder paused past
 * its lease, whose lock another caller took over and wrote under, then cannot overwrite that work.
 *
 * Holds only if every writer of the document goes through here with its lock's token (a plain index
 * without a version resets the version and with it the fence), and the tokens come from one lock
 * index (a new incarnation restarts them). `external_gte`, not `external`: the same holder may write
 * the same document several times under one grant.
 *
 * A fenced delete does not delete: it writes a **tombstone**, the same id indexed with the deleting
 * token as its version and a body of one reserved field, `{ "_fencedDeletedAt": "<ISO time>" }`
 * (FENCED_TOMBSTONE_FIELD). A real delete would fence only while Elasticsearch remembers it: it
 * prunes a delete's version after `index.gc_deletes` (60 s by default), and then a holder paused
 * longer re-creates the document with an older token and the fence goes backwards. A tombstone is a
 * document, so its version, and with it the fence, stays. Hence, for readers of fenced data:
 *
 * - A tombstone is an absent document. `get` it and test `isFencedTombstone(_source)`; exclude
 *   tombstones from searches with `excludeFencedTombstones` (a `must_not` `exists` on the field),
 *   counts and aggregations included.
 * - The field is the writer's: documents you write must not carry it, and an index with
 *   `dynamic: strict` mappings needs it mapped (`"_fencedDeletedAt": { "type": "date" }`).
 * - Tombstones are kept. Purge one (a plain delete) only once no holder older than it can still
 *   write: every lease granted before the fenced delete has ended, plus the clock-skew bound.
 *   Writing the id again with a newer token (writeFenced) simply replaces it.
 */

import type { estypes } from '@elastic/elasticsearch';
import { StaleFencingTokenError, ValidationError } from '../../packages/engine/src/errors.js';
import type { FencingToken } from '../../packages/engine/src/fencing.js';
import { responseFailure, translateError } from './errors.js';
import { type SearchClient, serverName } from './search-client.js';

export interface FencedWrite<T> {
  index: string;
  id: string;
  document: T;
  fencingToken: FencingToken;
  /** Passed through to the index request (e.g. `wait_for`); the default leaves it to the index. */
  refresh?: boolean | 'wait_for';
}

const isVersionConflict = (error: unknown): boolean => responseFailure(error)?.statusCode === 409;

/**
 * Indexes the document with the token as its version. Throws StaleFencingTokenError when a newer holder
 * already wrote it; a document carrying the tombstone's field is refused before any request
 * (ValidationError `document._fencedDeletedAt: not_allowed`, as the client's fencedWrite): it would
 * read as deleted.
 */
export async function writeFenced<T>(client: SearchClient, write: FencedWrite<T>): Promise<{ version: FencingToken }> {
  if (isFencedTombstone(write.document)) {
    throw new ValidationError({
      fields: [
        { field: `document.${FENCED_TOMBSTONE_FIELD}`, rule: 'not_allowed', message: 'is reserved for the tombstones of fenced deletes (use deleteFenced)' },
      ],
    });
  }
  try {
    await client.index({
      index: write.index,
      id: write.id,
      document: write.document,
      // Tokens pass 2^53: sent as the decimal string they are, never as a JSON number.
      version: write.fencingToken as unknown as number,
      version_type: 'external_gte',
      ...(write.refresh === undefined ? {} : { refresh: write.refresh }),
    });
    return { version: write.fencingToken };
  } catch (error) {
    if (isVersionConflict(error)) throw new StaleFencingTokenError({ index: write.index, id: write.id, fencingToken: write.fencingToken, cause: error });
    throw translateError(error, `fenced write of ${write.index}/${write.id}`, undefined, true, serverName(client));
  }
}

/** The reserved field that marks a tombstone left by deleteFenced; its value is when the delete was written (ISO 8601). */
export const FENCED_TOMBSTONE_FIELD = '_fencedDeletedAt';

/** The body of a tombstone. */
export type FencedTombstone = { [FENCED_TOMBSTONE_FIELD]: string };

/** Whether a document's `_source` is a tombstone left by deleteFenced: treat it as absent. */
export function isFencedTombstone(source: unknown): source is FencedTombstone {
  return typeof source === 'object' && source !== null && Object.hasOwn(source, FENCED_TOMBSTONE_FIELD);
}

/** A query clause that leaves tombstones out of a search: put it in a `bool` query's `filter` (or use it as the whole query). */
export const excludeFencedTombstones: estypes.QueryDslQueryContainer = { bool: { must_not: [{ exists: { field: FENCED_TOMBSTONE_FIELD } }] } };

/**
 * Deletes the document unless a newer holder wrote it since (then StaleFencingTokenError): writes a
 * tombstone with the token as its version (see above), so a later write with an older token is
 * refused however long after it comes. `deleted` is false when the id had no document (the tombstone
 * is written all the same); an id that already had a tombstone counts as deleted.
 */
export async function deleteFenced(client: SearchClient, target: Omit<FencedWrite<never>, 'document'>): Promise<{ deleted: boolean }> {
  try {
    const tombstone: FencedTombstone = { [FENCED_TOMBSTONE_FIELD]: new Date().toISOString() };
    const response = await client.index({
      index: target.index,
      id: target.id,
      document: tombstone,
      version: target.fencingToken as unknown as number,
      version_type: 'external_gte',
      ...(target.refresh === undefined ? {} : { refresh: target.refresh }),
    });
    return { deleted: response.result === 'updated' };
  } catch (error) {
    if (isVersionConflict(error)) throw new StaleFencingTokenError({ index: target.index, id: target.id, fencingToken: target.fencingToken, cause: error });
    throw translateError(error, `fenced delete of ${target.index}/${target.id}`, undefined, true, serverName(client));
  }
}
