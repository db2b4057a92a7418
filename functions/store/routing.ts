/**
 * Lock documents are routed by namespace: every request that names a lock document carries
 * `routing: <its namespace>`, and every search scoped to one namespace carries the same routing. So a
 * namespace's documents (its root, its document ids, its tree paths) all live on one shard of the lock
 * index, whose primary applies their writes in one sequence: the fencing tokens of a namespace, built
 * from that shard's (primary term, seq_no), only grow, and a bulk's items of one namespace (a write
 * and the primary reads after it) run in order on that one primary. Different namespaces spread over
 * the shards of a lock index made with several (`index:create -- --shards N`), so one primary's write
 * rate is no longer the ceiling of the whole lock service.
 *
 * With one shard (every lock index made before shards, and still the default) routing changes
 * nothing: every routing value leads to shard 0, so documents written before without routing are
 * found with it, and an existing lock index keeps working as it is.
 */

/**
 * The routing of a lock document: the namespace its id starts with. Lock document ids read
 * `<namespace>|<g|d|t>|<key>` (packages/engine/src/keys.ts), and a namespace cannot contain "|"
 * (NAMESPACE_PATTERN in packages/engine/src/validation.ts), so the namespace is everything before the
 * first "|". An id without one is no lock document id: it is routed by itself, which is where
 * Elasticsearch puts a document sent without routing (its default routing is the id).
 */
export function routingOf(docId: string): string {
  const end = docId.indexOf('|');
  return end > 0 ? docId.slice(0, end) : docId;
}

/** The routing of a search scoped to one namespace: the shard its documents live on. */
export const namespaceRouting = (namespace: string): string => namespace;
