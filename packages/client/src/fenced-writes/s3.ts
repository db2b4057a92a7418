/**
 * Fenced writes to S3 objects. S3 compares ETags, not numbers, so the token lives in the object's
 * user metadata (`x-amz-meta-fencing-token`) and each write is a read and a conditional put: HeadObject
 * (refused if the token there is newer than ours), then PutObject with `If-Match` on the ETag read
 * (`If-None-Match: *` when there was no object). A lost race (412, 409 ConditionalRequestConflict, or
 * the object gone under `If-Match`) starts again from the read, so the write lands on a state whose
 * token was seen, and is refused once a newer one is there. A delete puts a tombstone in the object's
 * place (metadata `fenced-deleted-at`, a small JSON body naming the token), so an older token cannot
 * bring the object back.
 *
 * The limit: `If-Match` holds the write to the bytes read, not to the token. An object's ETag
 * without KMS encryption is the MD5 of its bytes (single-part), so if a newer holder rewrites exactly
 * the bytes an older, paused holder read, the older holder's write still passes and the token goes
 * back. Tombstones name their token in their body so that no two tokens' tombstones share an ETag;
 * for your own bodies it is stated in docs/fenced-writes.md.
 *
 * The client is yours, typed by shape: the aggregated client of `@aws-sdk/client-s3`
 * (`new S3(config)`), or anything with its headObject and putObject.
 */
import { compareFencingTokens } from '../fencing-token.js';
import { awsHttpStatus } from './aws-errors.js';
import { FencedOutError } from './errors.js';
import { type FencingTokenSource, InputCheck, TOKEN_LIMITS } from './validate.js';

/** The user metadata key that keeps an object's fencing token (sent as `x-amz-meta-fencing-token`). */
export const FENCED_S3_TOKEN_METADATA = 'fencing-token';
/** The user metadata key that marks a tombstone; its value is when the delete was written (ISO 8601). */
export const FENCED_S3_TOMBSTONE_METADATA = 'fenced-deleted-at';

/** Writes tried before a lost race is given back as S3's error: each lost race means another write landed. */
const MAX_ATTEMPTS = 5;

/** The PutObject the helpers send. */
interface FencedPutObjectRequest {
  Bucket: string;
  Key: string;
  Body: string | Uint8Array;
  ContentType?: string;
  Metadata: Record<string, string>;
  IfMatch?: string;
  IfNoneMatch?: string;
}

/**
 * The inputs as the client's methods are declared to take them: loose (every member optional), so
 * that the SDK's own input types, of whatever version, are assignable to them.
 */
interface LooseObjectInput {
  Bucket?: string | undefined;
  Key?: string | undefined;
  Body?: unknown;
  ContentType?: string | undefined;
  Metadata?: Record<string, string> | undefined;
  IfMatch?: string | undefined;
  IfNoneMatch?: string | undefined;
}

/** The calls the helpers make: the aggregated `S3` client of `@aws-sdk/client-s3` has them as they are. */
export interface FencedS3Client {
  headObject(input: LooseObjectInput): Promise<{ ETag?: string | undefined; Metadata?: Record<string, string> | undefined }>;
  putObject(input: LooseObjectInput): Promise<{ ETag?: string | undefined }>;
}

/** Which object, under which token. */
export interface FencedObjectTarget {
  Bucket: string;
  Key: string;
  /** The lock's fencing token: the string, or the lock handle itself (anything with `fencingToken`). */
  fencingToken: FencingTokenSource;
}

/** A whole object to write. */
export interface FencedPutObjectInput extends FencedObjectTarget {
  /** The bytes: a string or a Uint8Array (a Buffer), not a stream: a lost race sends them again. */
  Body: string | Uint8Array;
  ContentType?: string;
  /** Your user metadata (the token's and the tombstone's keys are the helpers'). */
  Metadata?: Record<string, string>;
  /** Other PutObject parameters, sent as given (CacheControl, ServerSideEncryption, StorageClass...); not the ones above, nor IfMatch or IfNoneMatch. */
  parameters?: Record<string, unknown>;
}

/** A write that landed. */
export interface FencedObjectResult {
  Bucket: string;
  Key: string;
  /** The token it was written with, now the object's `fencing-token` metadata. */
  fencingToken: string;
  /** `created` or `updated` (put: whether a live object was there); `deleted` or `not_found` (delete: whether an object or a tombstone was there). */
  result: 'created' | 'updated' | 'deleted' | 'not_found';
  /** The ETag of what was written. */
  ETag: string | undefined;
}

/** What a read found: the ETag to write on, and the token and tombstone mark in the metadata. */
interface Found {
  etag: string;
  token: string | undefined;
  tombstone: boolean;
}

interface Checked {
  bucket: string;
  key: string;
  fencingToken: string;
}

const RESERVED_METADATA = [FENCED_S3_TOKEN_METADATA, FENCED_S3_TOMBSTONE_METADATA];
const HELPERS_PARAMETERS = ['Bucket', 'Key', 'Body', 'ContentType', 'Metadata', 'IfMatch', 'IfNoneMatch'];
const DECIMAL = /^(?:0|[1-9][0-9]*)$/;

/** A metadata value by key whatever its case (S3 keeps user metadata keys in lower case). */
const metadataValue = (metadata: Record<string, string> | undefined, key: string): string | undefined =>
  Object.entries(metadata ?? {}).find(([name]) => name.toLowerCase() === key)?.[1];

/** Whether a HeadObject's or GetObject's answer is a tombstone left by fencedDeleteObject: treat the object as absent. */
export function isFencedTombstoneObject(object: { Metadata?: Record<string, string> | undefined }): boolean {
  return metadataValue(object.Metadata, FENCED_S3_TOMBSTONE_METADATA) !== undefined;
}

function checkTarget(input: InputCheck, target: FencedObjectTarget): Checked {
  input.name(target.Bucket, 'Bucket');
  input.name(target.Key, 'Key');
  const fencingToken = input.token(target.fencingToken, 'fencingToken', TOKEN_LIMITS.aws) ?? '';
  return { bucket: target.Bucket, key: target.Key, fencingToken };
}

function checkPut(input: InputCheck, write: FencedPutObjectInput): void {
  if (typeof write.Body !== 'string' && !(write.Body instanceof Uint8Array)) {
    input.add('Body', 'type', 'must be a string or a Uint8Array (a Buffer), not a stream: a write that lost a race is sent again');
  }
  if (write.ContentType !== undefined && typeof write.ContentType !== 'string') input.add('ContentType', 'type', 'must be a string when given');
  const metadata: unknown = write.Metadata;
  if (metadata !== undefined) {
    if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
      input.add('Metadata', 'type', 'must be an object of strings when given');
    } else {
      for (const [name, value] of Object.entries(metadata)) {
        if (typeof value !== 'string') input.add(`Metadata.${name}`, 'type', 'must be a string');
        if (RESERVED_METADATA.includes(name.toLowerCase())) {
          input.add(`Metadata.${name}`, 'reserved', `is the fenced write helpers' own metadata (the token, or the tombstone's mark: use fencedDeleteObject)`);
        }
      }
    }
  }
  const parameters: unknown = write.parameters;
  if (parameters === undefined) return;
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) {
    input.add('parameters', 'type', 'must be an object of PutObject parameters when given');
    return;
  }
  for (const name of Object.keys(parameters)) {
    if (HELPERS_PARAMETERS.includes(name))
      input.add(`parameters.${name}`, 'not_allowed', 'is set by the helpers (give Body, ContentType and Metadata as fields of the write)');
  }
}

/** The object as it is now: its ETag and token, or undefined when there is none (404). */
async function read(client: FencedS3Client, target: Checked): Promise<Found | undefined> {
  let head: Awaited<ReturnType<FencedS3Client['headObject']>>;
  try {
    head = await client.headObject({ Bucket: target.bucket, Key: target.key });
  } catch (error) {
    if (awsHttpStatus(error) === 404) return undefined;
    throw error;
  }
  const where = `s3://${target.bucket}/${target.key}`;
  if (!head.ETag) throw new Error(`${where}: HeadObject answered no ETag, which the conditional write needs`);
  const token = metadataValue(head.Metadata, FENCED_S3_TOKEN_METADATA);
  if (token !== undefined && !DECIMAL.test(token)) {
    throw new Error(
      `${where}: its ${FENCED_S3_TOKEN_METADATA} metadata is ${JSON.stringify(token)}, not a fencing token: something other than the fenced write helpers wrote it`,
    );
  }
  return { etag: head.ETag, token, tombstone: isFencedTombstoneObject(head) };
}

/** Another write landed between our read and our write: 412 Precondition Failed, 409 ConditionalRequestConflict, or (If-Match) the object gone. */
function lostRace(error: unknown, found: Found | undefined): boolean {
  const status = awsHttpStatus(error);
  return status === 412 || status === 409 || (found !== undefined && status === 404);
}

/**
 * Read, refuse a newer token, write conditioned on what was read; again from the read after a lost
 * race (at most MAX_ATTEMPTS writes, then S3's 412 or 409 as it came: retryable).
 */
async function writeOnRead(
  client: FencedS3Client,
  target: Checked,
  request: FencedPutObjectRequest,
): Promise<{ found: Found | undefined; etag: string | undefined }> {
  for (let attempt = 1; ; attempt += 1) {
    const found = await read(client, target);
    if (found?.token !== undefined && compareFencingTokens(found.token, target.fencingToken) > 0) {
      throw new FencedOutError({ sink: 's3', index: target.bucket, id: target.key, fencingToken: target.fencingToken, currentToken: found.token });
    }
    try {
      const answer = await client.putObject({ ...request, ...(found ? { IfMatch: found.etag } : { IfNoneMatch: '*' }) });
      return { found, etag: answer.ETag };
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !lostRace(error, found)) throw error;
    }
  }
}

const landed = (target: Checked, result: FencedObjectResult['result'], etag: string | undefined): FencedObjectResult => ({
  Bucket: target.bucket,
  Key: target.key,
  fencingToken: target.fencingToken,
  result,
  ETag: etag,
});

/**
 * Writes the whole object under the token (replacing what is there, a tombstone included):
 * FencedOutError when the object carries a newer token. Needs s3:GetObject (HeadObject) and, for a
 * missing object to read as missing (404, not 403), s3:ListBucket on the bucket.
 */
export async function fencedPutObject(client: FencedS3Client, write: FencedPutObjectInput): Promise<FencedObjectResult> {
  const input = new InputCheck();
  const target = checkTarget(input, write);
  checkPut(input, write);
  input.throwIfAny();
  const request = {
    ...write.parameters,
    Bucket: target.bucket,
    Key: target.key,
    Body: write.Body,
    ...(write.ContentType === undefined ? {} : { ContentType: write.ContentType }),
    Metadata: { ...write.Metadata, [FENCED_S3_TOKEN_METADATA]: target.fencingToken },
  };
  const { found, etag } = await writeOnRead(client, target, request);
  return landed(target, found === undefined || found.tombstone ? 'created' : 'updated', etag);
}

/**
 * Deletes the object under the token by putting a tombstone in its place: metadata with the token and
 * `fenced-deleted-at`, and a small JSON body naming both (so that tombstones of different tokens
 * never share an ETag). FencedOutError when the object carries a newer token. `result`: `deleted`
 * when an object or a tombstone was there, `not_found` otherwise (the tombstone is written either way).
 */
export async function fencedDeleteObject(client: FencedS3Client, target: FencedObjectTarget): Promise<FencedObjectResult> {
  const input = new InputCheck();
  const checked = checkTarget(input, target);
  input.throwIfAny();
  const deletedAt = new Date().toISOString();
  const request = {
    Bucket: checked.bucket,
    Key: checked.key,
    Body: JSON.stringify({ fencedDeletedAt: deletedAt, fencingToken: checked.fencingToken }),
    ContentType: 'application/json',
    Metadata: { [FENCED_S3_TOKEN_METADATA]: checked.fencingToken, [FENCED_S3_TOMBSTONE_METADATA]: deletedAt },
  };
  const { found, etag } = await writeOnRead(client, checked, request);
  return landed(checked, found === undefined ? 'not_found' : 'deleted', etag);
}
