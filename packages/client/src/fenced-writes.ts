/**
 * Fenced writes to your own Elasticsearch or OpenSearch indices: every write carries the lock's
 * fencing token, and the server refuses one whose token is older than the last one applied to that
 * document (FencedOutError). A holder paused past its lease, whose lock a later holder took and wrote
 * under, then cannot overwrite that work.
 *
 * The token is the document's external version (`version_type=external_gte`, sent as its decimal
 * string: tokens pass 2^53). No scripts (Elastic's minimal distribution has no painless): a partial
 * update reads the document (realtime GET), merges on the client and indexes the result with the
 * token, and a delete writes a tombstone that keeps the token (see fenced-writes/tombstone.ts). It
 * holds only if every writer of those documents writes through here with its lock's token. Two
 * partial updates of one document by the same holder at the same time may overwrite each other:
 * the server orders tokens, not writes under one token, so a holder serializes its own writes.
 *
 * The client is yours, typed by shape (FencedWritesClient): `@elastic/elasticsearch` or
 * `@opensearch-project/opensearch`, from `import` or `require`. Failures other than a refusal are
 * your client's own errors, as it threw them. See docs/fenced-writes.md.
 *
 * The same fence for DynamoDB items (fencedPutItem, fencedUpdateItem, fencedDeleteItem:
 * fenced-writes/dynamodb.ts) and S3 objects (fencedPutObject, fencedDeleteObject: fenced-writes/s3.ts),
 * with your own AWS SDK clients; a refusal is the same FencedOutError, its `sink` saying which.
 */
import { type Decision, decideCreate, decideUpdate, stateOf } from './fenced-writes/decide.js';
import { tombstone } from './fenced-writes/tombstone.js';
import { type FencedWritesClient, readDocument } from './fenced-writes/transport.js';
import type { FencedTarget, FencedWriteResult } from './fenced-writes/types.js';
import { InputCheck } from './fenced-writes/validate.js';
import { indexWithToken, type WriteTarget } from './fenced-writes/write.js';

export {
  type FencedBulkItem,
  type FencedBulkItemResult,
  type FencedBulkOp,
  type FencedBulkRequest,
  type FencedBulkResult,
  fencedBulk,
} from './fenced-writes/bulk.js';
export {
  FENCED_TOKEN_ATTRIBUTE,
  type FencedAttributeValue,
  type FencedDynamoDBClient,
  type FencedItem,
  type FencedItemResult,
  type FencedItemTarget,
  fencedDeleteItem,
  fencedPutItem,
  fencedUpdateItem,
  isFencedTombstoneItem,
} from './fenced-writes/dynamodb.js';
export {
  FencedBulkItemError,
  FencedDocumentExistsError,
  FencedDocumentMissingError,
  FencedOutError,
  type FencedSink,
} from './fenced-writes/errors.js';
export {
  FENCED_S3_TOKEN_METADATA,
  FENCED_S3_TOMBSTONE_METADATA,
  type FencedObjectResult,
  type FencedObjectTarget,
  type FencedPutObjectInput,
  type FencedS3Client,
  fencedDeleteObject,
  fencedPutObject,
  isFencedTombstoneObject,
} from './fenced-writes/s3.js';
export { excludeFencedTombstones, FENCED_TOMBSTONE_FIELD, type FencedTombstone, isFencedTombstone } from './fenced-writes/tombstone.js';
export type { FencedTransportOptions, FencedTransportParams, FencedWritesClient } from './fenced-writes/transport.js';
export type { FencedTarget, FencedWriteResult } from './fenced-writes/types.js';
export { type FencingTokenSource, fencingTokenOf } from './fenced-writes/validate.js';
export type { FencedRefresh } from './fenced-writes/write.js';

/** The target checked (and `document` or `doc` when named), before any request. */
function checked(target: FencedTarget, documentField?: 'document' | 'doc'): WriteTarget {
  const input = new InputCheck();
  input.name(target.index, 'index');
  input.name(target.id, 'id');
  input.name(target.routing, 'routing', true);
  if (documentField) input.document((target as unknown as Record<string, unknown>)[documentField], documentField);
  const fencingToken = input.token(target.fencingToken, 'fencingToken');
  input.throwIfAny();
  return { index: target.index, id: target.id, fencingToken: fencingToken!, routing: target.routing, refresh: target.refresh };
}

const landed = (target: WriteTarget, result: FencedWriteResult['result']): FencedWriteResult => ({
  index: target.index,
  id: target.id,
  fencingToken: target.fencingToken,
  result,
});

/** Writes the whole document under the token (replacing what is there, a tombstone included). FencedOutError when a newer token is there. */
export async function fencedIndex(client: FencedWritesClient, write: FencedTarget & { document: object }): Promise<FencedWriteResult> {
  const target = checked(write, 'document');
  return landed(target, await indexWithToken(client, target, write.document as Record<string, unknown>));
}

async function afterRead(
  client: FencedWritesClient,
  target: WriteTarget,
  decide: (state: ReturnType<typeof stateOf>) => Decision,
): Promise<Record<string, unknown>> {
  const decision = decide(stateOf(await readDocument(client, target)));
  if ('refuse' in decision) throw decision.refuse;
  await indexWithToken(client, target, decision.write);
  return decision.write;
}

/**
 * Writes the document under the token if no live one is there (nothing, or a tombstone):
 * FencedDocumentExistsError otherwise, FencedOutError when a newer token is there. The check is a
 * realtime read before the write: the fence is the server's, the "create" is the client's (a write
 * under a token not newer than ours landing between the two is replaced).
 */
export async function fencedCreate(client: FencedWritesClient, write: FencedTarget & { document: object }): Promise<FencedWriteResult> {
  const target = checked(write, 'document');
  await afterRead(client, target, (state) => decideCreate(target, state, write.document as Record<string, unknown>));
  return landed(target, 'created');
}

/**
 * Merges `doc` into the document (objects key by key, anything else replaced, as the servers' update
 * merges) and writes the result under the token: a realtime read, then a fenced index. Refused with
 * FencedOutError when a newer token is there (at the read, or by the server at the write), with
 * FencedDocumentMissingError when there is no document or only a tombstone (a deleted document is
 * absent: write it whole with fencedIndex or fencedCreate). Two updates of one document under the
 * same token at the same time may overwrite each other: a holder serializes its own writes.
 * Answers the document as written.
 */
export async function fencedUpdate<T extends object = Record<string, unknown>>(
  client: FencedWritesClient,
  write: FencedTarget & { doc: object },
): Promise<FencedWriteResult & { document: T }> {
  const target = checked(write, 'doc');
  const document = await afterRead(client, target, (state) => decideUpdate(target, state, write.doc as Record<string, unknown>));
  return { ...landed(target, 'updated'), document: document as T };
}

/**
 * Deletes the document under the token by writing a tombstone in its place, `{ "_fencedDeletedAt":
 * "<ISO time>" }` with the token as its version, so that an older token stays refused however late
 * it comes (a real delete is forgotten after `index.gc_deletes`). FencedOutError when a newer token
 * is there. `result`: `deleted` when a document (or a tombstone) was there, `not_found` otherwise.
 */
export async function fencedDelete(client: FencedWritesClient, target: FencedTarget): Promise<FencedWriteResult> {
  const checkedTarget = checked(target);
  const result = await indexWithToken(client, checkedTarget, tombstone());
  return landed(checkedTarget, result === 'created' ? 'not_found' : 'deleted');
}
