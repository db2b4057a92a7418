/**
 * Tombstones: what a fenced delete writes instead of deleting. The same id indexed with the
 * deleting token as its version and a body of one reserved field, `{ "_fencedDeletedAt": "<ISO
 * time>" }`, the same as the service's own fenced delete (functions/store/fenced-document.ts). A
 * real delete fences only while the server remembers it (`index.gc_deletes`, 60 s by default);
 * after that a paused holder's older token could re-create the document. A tombstone is a
 * document, so its version, and with it the fence, stays.
 *
 * Readers treat a tombstone as an absent document: test `isFencedTombstone(_source)` after a get,
 * and put `excludeFencedTombstones` in searches, counts and aggregations.
 */

/** The reserved field that marks a tombstone; its value is when the delete was written (ISO 8601). */
export const FENCED_TOMBSTONE_FIELD = '_fencedDeletedAt';

/** The body of a tombstone. */
export type FencedTombstone = { [FENCED_TOMBSTONE_FIELD]: string };

/** Whether a document's `_source` is a tombstone left by a fenced delete: treat it as absent. */
export function isFencedTombstone(source: unknown): source is FencedTombstone {
  return typeof source === 'object' && source !== null && Object.hasOwn(source, FENCED_TOMBSTONE_FIELD);
}

/** A query clause (Elasticsearch and OpenSearch query DSL) that leaves tombstones out: put it in a `bool` query's `filter`, or use it as the whole query. */
export const excludeFencedTombstones: { bool: { must_not: Array<{ exists: { field: string } }> } } = {
  bool: { must_not: [{ exists: { field: FENCED_TOMBSTONE_FIELD } }] },
};

export const tombstone = (): FencedTombstone => ({ [FENCED_TOMBSTONE_FIELD]: new Date().toISOString() });
