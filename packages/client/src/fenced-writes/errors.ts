/**
 * The refusals of fenced writes: a newer token on the document (in any sink), a create over a live
 * document, a partial update of no document (none retryable as it is: their retryability is the
 * catalogue of local errors'), and a bulk item the server failed for another reason.
 */
import { localError } from '../local-errors.js';
import type { Target } from './decide.js';

/** Where a fenced write goes: Elasticsearch or OpenSearch (`elasticsearch`), a DynamoDB table, an S3 bucket. */
export type FencedSink = 'elasticsearch' | 'dynamodb' | 's3';

/** What a refusal of a write to one document carries. */
interface Refused extends Target {
  /**
   * The sink that refused. With it, `index` is the index, the table or the bucket, and `id` the
   * document id, the item's key (its attributes as JSON, names sorted) or the object key.
   */
  sink: FencedSink;
  /** The newer token the document carries (or, for a create, the token the live one was written with), when known. */
  currentToken: string | undefined;
}

/** A refused write as the helpers know it: its target (in Elasticsearch unless told), and the token found on the document when one was. */
type Found = Target & { currentToken?: string | undefined; sink?: FencedSink };

/** Only the fields a refusal carries, whatever else the caller's target holds (an op, a routing). */
const refused = ({ index, id, fencingToken, currentToken, sink = 'elasticsearch' }: Found): Refused => ({
  sink,
  index,
  id,
  fencingToken,
  currentToken,
});

/** How a message names the document: `index/id`, `DynamoDB table T, item {key}`, `s3://bucket/key`. */
function place({ index, id, sink = 'elasticsearch' }: Found): string {
  if (sink === 'dynamodb') return `DynamoDB table ${index}, item ${id},`;
  if (sink === 's3') return `s3://${index}/${id}`;
  return `${index}/${id}`;
}

/**
 * A fenced write refused because the document already carries a newer fencing token: a later holder
 * of the lock wrote it (or deleted it, leaving a tombstone), so this holder lost the lock at some
 * point and its write must not land. Not retryable with this token.
 */
export class FencedOutError extends localError<Refused>('FencedOutError') {
  constructor(target: Found, options: { cause?: unknown } = {}) {
    const newer = target.currentToken === undefined ? 'a newer fencing token' : `fencing token ${target.currentToken}`;
    const message = `Fenced out: ${place(target)} already carries ${newer}, newer than this write's ${target.fencingToken}; a later holder of the lock wrote it, so this write was refused`;
    super(refused(target), message, options);
  }
}

/** fencedCreate (or a bulk `create`) found a live document (not a tombstone) under the id: nothing was written. */
export class FencedDocumentExistsError extends localError<Refused>('FencedDocumentExistsError') {
  constructor(target: Found) {
    const written = target.currentToken === undefined ? '' : ` (written with fencing token ${target.currentToken})`;
    super(
      refused(target),
      `${target.index}/${target.id} already exists${written}: a fenced create with token ${target.fencingToken} does not replace it (use fencedIndex)`,
    );
  }
}

/** fencedUpdate (or a bulk `update`) found no document to merge into, or only a tombstone: nothing was written. */
export class FencedDocumentMissingError extends localError<
  Refused & {
    /** Whether a tombstone (a fenced delete) stands there; its token is then `currentToken` when known. */
    deleted: boolean;
  }
>('FencedDocumentMissingError') {
  constructor(target: Found & { deleted: boolean }) {
    const state = target.deleted
      ? `was deleted by a fenced delete${target.currentToken === undefined ? '' : ` with fencing token ${target.currentToken}`} (a tombstone)`
      : 'does not exist';
    super(
      { ...refused(target), deleted: target.deleted },
      `${target.index}/${target.id} ${state}: a fenced partial update with token ${target.fencingToken} has nothing to merge into (use fencedIndex or fencedCreate)`,
    );
  }
}

/**
 * A bulk item the server failed for a reason other than a newer token (a mapping error, a missing
 * index, a rejection under load...). Not in the catalogue of local errors: whether retrying the item
 * can succeed is the data cluster's word on it (its status), not a property of the name.
 */
export class FencedBulkItemError extends Error {
  override readonly name = 'FencedBulkItemError';
  readonly index: string;
  readonly id: string;
  /** The item's HTTP status, when the server gave one (the read before the writes gives none). */
  readonly status: number | undefined;
  /** The server's error type and reason (e.g. `mapper_parsing_exception`). */
  readonly type: string | undefined;
  readonly reason: string | undefined;
  /** Worth retrying the item: the server pushed back (429) or was unavailable (5xx). */
  readonly retryable: boolean;

  constructor(details: { index: string; id: string; status?: number | undefined; type?: string | undefined; reason?: string | undefined }) {
    const what = [details.status, details.type, details.reason].filter((part) => part !== undefined).join(' ');
    super(`${details.index}/${details.id}: the server failed the item${what === '' ? '' : `: ${what}`}`);
    this.index = details.index;
    this.id = details.id;
    this.status = details.status;
    this.type = details.type;
    this.reason = details.reason;
    this.retryable = details.status === 429 || (details.status !== undefined && details.status >= 500);
  }
}
