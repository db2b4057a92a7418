/**
 * The refusals of fenced writes other than a newer token (FencedOutError, in ../errors.ts): a
 * create over a live document, a partial update of no document, and a bulk item the server failed
 * for another reason. None is retryable as it is.
 */

interface Target {
  index: string;
  id: string;
  fencingToken: string;
}

/** fencedCreate (or a bulk `create`) found a live document (not a tombstone) under the id: nothing was written. */
export class FencedDocumentExistsError extends Error {
  override readonly name = 'FencedDocumentExistsError';
  readonly retryable = false;
  readonly index: string;
  readonly id: string;
  readonly fencingToken: string;
  /** The token the existing document was written with (its version), when known. */
  readonly currentToken: string | undefined;

  constructor(target: Target & { currentToken?: string | undefined }) {
    const written = target.currentToken === undefined ? '' : ` (written with fencing token ${target.currentToken})`;
    super(`${target.index}/${target.id} already exists${written}: a fenced create with token ${target.fencingToken} does not replace it (use fencedIndex)`);
    this.index = target.index;
    this.id = target.id;
    this.fencingToken = target.fencingToken;
    this.currentToken = target.currentToken;
  }
}

/** fencedUpdate (or a bulk `update`) found no document to merge into, or only a tombstone: nothing was written. */
export class FencedDocumentMissingError extends Error {
  override readonly name = 'FencedDocumentMissingError';
  readonly retryable = false;
  readonly index: string;
  readonly id: string;
  readonly fencingToken: string;
  /** Whether a tombstone (a fenced delete) stands there; its token is then `currentToken` when known. */
  readonly deleted: boolean;
  readonly currentToken: string | undefined;

  constructor(target: Target & { deleted: boolean; currentToken?: string | undefined }) {
    const state = target.deleted
      ? `was deleted by a fenced delete${target.currentToken === undefined ? '' : ` with fencing token ${target.currentToken}`} (a tombstone)`
      : 'does not exist';
    super(
      `${target.index}/${target.id} ${state}: a fenced partial update with token ${target.fencingToken} has nothing to merge into (use fencedIndex or fencedCreate)`,
    );
    this.index = target.index;
    this.id = target.id;
    this.fencingToken = target.fencingToken;
    this.deleted = target.deleted;
    this.currentToken = target.currentToken;
  }
}

/** A bulk item the server failed for a reason other than a newer token (a mapping error, a missing index, a rejection under load...). */
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
