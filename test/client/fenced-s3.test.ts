/**
 * Fenced writes to S3 objects (packages/client/src/fenced-writes/s3.ts) with the real AWS SDK v3
 * client, on the project's AWS emulator (moto, test/support/aws.ts), which has PutObject's
 * `If-Match` and `If-None-Match: *` as S3 does (412 Precondition Failed). A lost race needs another
 * write between a write's read and its put: the client here is the real one with a write of another
 * holder interposed before the put (a real server cannot be made to interleave so on demand). moto
 * serves one request at a time, so it never answers S3's 409 ConditionalRequestConflict: that one
 * is a stand-in's, and the real-account part below races real writers. Tokens are strings chosen
 * here; a revoke is what it leaves downstream, a later holder's larger token.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { type HeadObjectCommandInput, type PutObjectCommandInput, S3 } from '@aws-sdk/client-s3';
import {
  FENCED_S3_TOKEN_METADATA,
  FENCED_S3_TOMBSTONE_METADATA,
  FencedOutError,
  type FencedS3Client,
  fencedDeleteObject,
  fencedPutObject,
  isFencedTombstoneObject,
  ValidationError,
} from '@es-lease-locks/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsEmulatorUrl, emulatorClientConfig, uniqueName } from '../support/aws.js';

// Compile-time check: the SDK's aggregated client fits the structural type as it is.
const fitsSdk = (client: S3): FencedS3Client => client;
void fitsSdk;

const BELOW_2_53 = '9007199254740992';
const ABOVE_2_53 = '9007199254740993'; // the same double as BELOW_2_53
const DIGITS_30 = '123456789012345678901234567890';
const DIGITS_30_NEXT = '123456789012345678901234567891';

const settle = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => new Error('expected a refusal, but the write landed'),
    (error: unknown) => error,
  );

let s3: S3;
const bucket = uniqueName('fenced-objects');

/** The object as stored: body, token, tombstone mark, ETag (undefined when there is none). */
async function stored(key: string, client = s3, from = bucket) {
  try {
    const object = await client.getObject({ Bucket: from, Key: key });
    return {
      body: await object.Body!.transformToString(),
      token: object.Metadata?.[FENCED_S3_TOKEN_METADATA],
      tombstone: isFencedTombstoneObject(object),
      etag: object.ETag,
    };
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
    throw error;
  }
}

async function expectFencedOut(attempt: Promise<unknown>, key: string, fencingToken: string, currentToken: string, from = bucket): Promise<FencedOutError> {
  const error = await settle(attempt);
  expect(error).toBeInstanceOf(FencedOutError);
  const fenced = error as FencedOutError;
  expect({ sink: fenced.sink, index: fenced.index, id: fenced.id, fencingToken: fenced.fencingToken, currentToken: fenced.currentToken }).toEqual({
    sink: 's3',
    index: from,
    id: key,
    fencingToken,
    currentToken,
  });
  expect(fenced.message).toContain(`s3://${from}/${key}`);
  expect(fenced.message).toContain(currentToken);
  return fenced;
}

/** The real client, with `before` run before each of the first `times` puts (another holder's write landing between our read and our put). */
function interposed(before: () => Promise<unknown>, times = 1): FencedS3Client & { puts: number } {
  let left = times;
  const client = {
    puts: 0,
    headObject: (input: object) => s3.headObject(input as HeadObjectCommandInput),
    putObject: async (input: object) => {
      client.puts += 1;
      if (left > 0) {
        left -= 1;
        await before();
      }
      return s3.putObject(input as PutObjectCommandInput);
    },
  };
  return client;
}

beforeAll(async () => {
  s3 = new S3({ ...emulatorClientConfig(await awsEmulatorUrl()), forcePathStyle: true });
  await s3.createBucket({ Bucket: bucket });
});
afterAll(() => s3?.destroy());

describe('fencedPutObject', () => {
  it('creates a new object with the token in its metadata; the same token replaces it; a newer one too', async () => {
    const created = await fencedPutObject(s3, {
      Bucket: bucket,
      Key: 'p1',
      fencingToken: '10',
      Body: 'one',
      ContentType: 'text/plain',
      Metadata: { kind: 'k' },
    });
    expect(created).toEqual({ Bucket: bucket, Key: 'p1', fencingToken: '10', result: 'created', ETag: expect.any(String) });
    const head = await s3.headObject({ Bucket: bucket, Key: 'p1' });
    expect(head.Metadata).toEqual({ kind: 'k', [FENCED_S3_TOKEN_METADATA]: '10' });
    expect(head.ContentType).toBe('text/plain');
    await expect(fencedPutObject(s3, { Bucket: bucket, Key: 'p1', fencingToken: '10', Body: Buffer.from('two') })).resolves.toMatchObject({
      result: 'updated',
    });
    await fencedPutObject(s3, { Bucket: bucket, Key: 'p1', fencingToken: { fencingToken: '11' }, Body: 'three', parameters: { CacheControl: 'no-store' } });
    expect(await stored('p1')).toMatchObject({ body: 'three', token: '11', tombstone: false });
    expect((await s3.headObject({ Bucket: bucket, Key: 'p1' })).CacheControl).toBe('no-store');
  });

  it('refuses an older holder after a later one wrote, naming both tokens (past 2^53, of 30 digits), and changes nothing', async () => {
    await fencedPutObject(s3, { Bucket: bucket, Key: 'p2', fencingToken: ABOVE_2_53, Body: 'later' });
    await expectFencedOut(fencedPutObject(s3, { Bucket: bucket, Key: 'p2', fencingToken: BELOW_2_53, Body: 'late' }), 'p2', BELOW_2_53, ABOVE_2_53);
    expect(await stored('p2')).toMatchObject({ body: 'later', token: ABOVE_2_53 });

    await fencedPutObject(s3, { Bucket: bucket, Key: 'p3', fencingToken: DIGITS_30_NEXT, Body: 'later' });
    await expectFencedOut(fencedPutObject(s3, { Bucket: bucket, Key: 'p3', fencingToken: DIGITS_30, Body: 'late' }), 'p3', DIGITS_30, DIGITS_30_NEXT);
    await expectFencedOut(fencedPutObject(s3, { Bucket: bucket, Key: 'p3', fencingToken: '99999', Body: 'late' }), 'p3', '99999', DIGITS_30_NEXT);
    expect(await stored('p3')).toMatchObject({ body: 'later', token: DIGITS_30_NEXT });
  });

  it('an object written around the helpers (no token) is replaced; a token that is not one is an error', async () => {
    await s3.putObject({ Bucket: bucket, Key: 'p4', Body: 'plain' });
    await expect(fencedPutObject(s3, { Bucket: bucket, Key: 'p4', fencingToken: '1', Body: 'fenced' })).resolves.toMatchObject({ result: 'updated' });
    await s3.putObject({ Bucket: bucket, Key: 'p5', Body: 'odd', Metadata: { [FENCED_S3_TOKEN_METADATA]: 'abc' } });
    const error = await settle(fencedPutObject(s3, { Bucket: bucket, Key: 'p5', fencingToken: '1', Body: 'fenced' }));
    expect(error).not.toBeInstanceOf(FencedOutError);
    expect((error as Error).message).toMatch(/not a fencing token/);
    expect(await stored('p5')).toMatchObject({ body: 'odd' });
  });
});

describe('fencedDeleteObject', () => {
  it('leaves a tombstone with the token, which refuses an older put or delete; a newer put makes an object of it again', async () => {
    await fencedPutObject(s3, { Bucket: bucket, Key: 'd1', fencingToken: '50', Body: 'x' });
    await expect(fencedDeleteObject(s3, { Bucket: bucket, Key: 'd1', fencingToken: '51' })).resolves.toMatchObject({ result: 'deleted', fencingToken: '51' });
    const head = await s3.headObject({ Bucket: bucket, Key: 'd1' });
    expect(isFencedTombstoneObject(head)).toBe(true);
    expect(head.Metadata).toEqual({ [FENCED_S3_TOKEN_METADATA]: '51', [FENCED_S3_TOMBSTONE_METADATA]: expect.any(String) });

    await expectFencedOut(fencedPutObject(s3, { Bucket: bucket, Key: 'd1', fencingToken: '50', Body: 'back' }), 'd1', '50', '51');
    await expectFencedOut(fencedDeleteObject(s3, { Bucket: bucket, Key: 'd1', fencingToken: '50' }), 'd1', '50', '51');
    expect(await stored('d1')).toMatchObject({ token: '51', tombstone: true });

    await expect(fencedPutObject(s3, { Bucket: bucket, Key: 'd1', fencingToken: '51', Body: 'again' })).resolves.toMatchObject({ result: 'created' });
    expect(await stored('d1')).toMatchObject({ body: 'again', token: '51', tombstone: false });
  });

  it('a delete of no object still leaves its tombstone', async () => {
    await expect(fencedDeleteObject(s3, { Bucket: bucket, Key: 'd2', fencingToken: DIGITS_30_NEXT })).resolves.toMatchObject({ result: 'not_found' });
    await expectFencedOut(fencedPutObject(s3, { Bucket: bucket, Key: 'd2', fencingToken: DIGITS_30, Body: 'x' }), 'd2', DIGITS_30, DIGITS_30_NEXT);
  });
});

describe('after a revoke', () => {
  // A revoke hands the next holder a token above every revoked holder's: downstream, a later token wrote.
  it("the revoked holder's put and delete are refused once the next holder wrote", async () => {
    const revoked = ABOVE_2_53;
    const next = '9007199254741010';
    await fencedPutObject(s3, { Bucket: bucket, Key: 'r1', fencingToken: revoked, Body: 'revoked' });
    await fencedPutObject(s3, { Bucket: bucket, Key: 'r1', fencingToken: next, Body: 'next' });
    await expectFencedOut(fencedPutObject(s3, { Bucket: bucket, Key: 'r1', fencingToken: revoked, Body: 'revoked again' }), 'r1', revoked, next);
    await expectFencedOut(fencedDeleteObject(s3, { Bucket: bucket, Key: 'r1', fencingToken: revoked }), 'r1', revoked, next);
    expect(await stored('r1')).toMatchObject({ body: 'next', token: next, tombstone: false });
  });
});

describe('a lost race', () => {
  it('a newer holder writing between the read and the put: the put fails on the ETag, the read again refuses', async () => {
    await fencedPutObject(s3, { Bucket: bucket, Key: 'l1', fencingToken: '5', Body: 'mine' });
    const client = interposed(() => fencedPutObject(s3, { Bucket: bucket, Key: 'l1', fencingToken: '7', Body: 'newer' }));
    await expectFencedOut(fencedPutObject(client, { Bucket: bucket, Key: 'l1', fencingToken: '6', Body: 'late' }), 'l1', '6', '7');
    expect(client.puts).toBe(1);
    expect(await stored('l1')).toMatchObject({ body: 'newer', token: '7' });
  });

  it('an older holder writing in between: retried on the new ETag, and lands', async () => {
    await fencedPutObject(s3, { Bucket: bucket, Key: 'l2', fencingToken: '5', Body: 'first' });
    const client = interposed(() => fencedPutObject(s3, { Bucket: bucket, Key: 'l2', fencingToken: '6', Body: 'between' }));
    await expect(fencedPutObject(client, { Bucket: bucket, Key: 'l2', fencingToken: '7', Body: 'mine' })).resolves.toMatchObject({ result: 'updated' });
    expect(client.puts).toBe(2);
    expect(await stored('l2')).toMatchObject({ body: 'mine', token: '7' });
  });

  it('two first writes of a new object: If-None-Match refuses the second, which is retried on the first one’s ETag', async () => {
    const client = interposed(() => fencedPutObject(s3, { Bucket: bucket, Key: 'l3', fencingToken: '5', Body: 'other' }));
    await expect(fencedPutObject(client, { Bucket: bucket, Key: 'l3', fencingToken: '5', Body: 'mine' })).resolves.toMatchObject({ result: 'updated' });
    expect(client.puts).toBe(2);
    expect(await stored('l3')).toMatchObject({ body: 'mine', token: '5' });
  });

  it('a newer delete between the read and the put: tombstones name their token, so their ETags differ and the put is refused', async () => {
    await fencedDeleteObject(s3, { Bucket: bucket, Key: 'l4', fencingToken: '5' });
    const client = interposed(() => fencedDeleteObject(s3, { Bucket: bucket, Key: 'l4', fencingToken: '7' }));
    await expectFencedOut(fencedPutObject(client, { Bucket: bucket, Key: 'l4', fencingToken: '6', Body: 'late' }), 'l4', '6', '7');
    expect(await stored('l4')).toMatchObject({ token: '7', tombstone: true });
  });

  it('given up after five lost races, with S3’s own 412 (retryable), not a refusal', async () => {
    await fencedPutObject(s3, { Bucket: bucket, Key: 'l5', fencingToken: '5', Body: 'x' });
    // Another writer (an older token) lands before each put: different bytes each time, so a new ETag each time.
    const client = interposed(
      () => s3.putObject({ Bucket: bucket, Key: 'l5', Body: `churn ${randomUUID()}`, Metadata: { [FENCED_S3_TOKEN_METADATA]: '1' } }),
      5,
    );
    const error = await settle(fencedPutObject(client, { Bucket: bucket, Key: 'l5', fencingToken: '9', Body: 'mine' }));
    expect(error).not.toBeInstanceOf(FencedOutError);
    expect(error).toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
    expect(client.puts).toBe(5);
  });

  it('S3’s 409 ConditionalRequestConflict (concurrent conditional writes) is a lost race too', async () => {
    // A stand-in answer: moto serves one request at a time and never answers 409.
    await fencedPutObject(s3, { Bucket: bucket, Key: 'l6', fencingToken: '5', Body: 'x' });
    let conflicts = 0;
    const client: FencedS3Client = {
      headObject: (input) => s3.headObject(input as HeadObjectCommandInput),
      putObject: (input) => {
        if (conflicts === 0) {
          conflicts += 1;
          return Promise.reject(Object.assign(new Error('conflict'), { name: 'ConditionalRequestConflict', $metadata: { httpStatusCode: 409 } }));
        }
        return s3.putObject(input as PutObjectCommandInput);
      },
    };
    await expect(fencedPutObject(client, { Bucket: bucket, Key: 'l6', fencingToken: '5', Body: 'mine' })).resolves.toMatchObject({ result: 'updated' });
    expect(conflicts).toBe(1);
  });

  it('two writers at once: the newer token is what stays, the older one landed first or was refused', async () => {
    for (let round = 0; round < 5; round += 1) {
      const key = `l7-${round}`;
      const [older, newer] = await Promise.allSettled([
        fencedPutObject(s3, { Bucket: bucket, Key: key, fencingToken: '5', Body: 'older' }),
        fencedPutObject(s3, { Bucket: bucket, Key: key, fencingToken: '7', Body: 'newer' }),
      ]);
      expect(newer.status).toBe('fulfilled');
      if (older.status === 'rejected') expect(older.reason).toBeInstanceOf(FencedOutError);
      expect(await stored(key)).toMatchObject({ body: 'newer', token: '7' });
    }
  });

  it('the limit stated in docs/fenced-writes.md: a newer holder rewriting the very bytes an older one read gives S3 the same ETag, and the older write lands', async () => {
    await fencedPutObject(s3, { Bucket: bucket, Key: 'l8', fencingToken: '5', Body: 'same bytes' });
    const client = interposed(() => fencedPutObject(s3, { Bucket: bucket, Key: 'l8', fencingToken: '7', Body: 'same bytes' }));
    await expect(fencedPutObject(client, { Bucket: bucket, Key: 'l8', fencingToken: '6', Body: 'late' })).resolves.toMatchObject({ result: 'updated' });
    expect(await stored('l8')).toMatchObject({ body: 'late', token: '6' });
  });
});

describe('input', () => {
  it('is checked before any request: every issue named, with its rule, and nothing written', async () => {
    const cases: Array<[string, () => Promise<unknown>, Array<{ field: string; rule: string }>]> = [
      [
        'a token with a sign',
        () => fencedPutObject(s3, { Bucket: bucket, Key: 'v1', fencingToken: '+5', Body: 'x' }),
        [{ field: 'fencingToken', rule: 'format' }],
      ],
      [
        'a token of 39 digits',
        () => fencedDeleteObject(s3, { Bucket: bucket, Key: 'v1', fencingToken: `1${'0'.repeat(38)}` }),
        [{ field: 'fencingToken', rule: 'max' }],
      ],
      [
        'no bucket, no key, no token',
        () => fencedDeleteObject(s3, { Bucket: '', Key: undefined as unknown as string, fencingToken: undefined as unknown as string }),
        [
          { field: 'Bucket', rule: 'required' },
          { field: 'Key', rule: 'required' },
          { field: 'fencingToken', rule: 'required' },
        ],
      ],
      [
        'a stream body',
        () => fencedPutObject(s3, { Bucket: bucket, Key: 'v1', fencingToken: '1', Body: Readable.from(['x']) as unknown as string }),
        [{ field: 'Body', rule: 'type' }],
      ],
      [
        "metadata of the helpers' keys",
        () =>
          fencedPutObject(s3, {
            Bucket: bucket,
            Key: 'v1',
            fencingToken: '1',
            Body: 'x',
            Metadata: { 'Fencing-Token': '99', [FENCED_S3_TOMBSTONE_METADATA]: 'now' },
          }),
        [
          { field: 'Metadata.Fencing-Token', rule: 'reserved' },
          { field: `Metadata.${FENCED_S3_TOMBSTONE_METADATA}`, rule: 'reserved' },
        ],
      ],
      [
        'a condition of its own',
        () => fencedPutObject(s3, { Bucket: bucket, Key: 'v1', fencingToken: '1', Body: 'x', parameters: { IfNoneMatch: '*' } }),
        [{ field: 'parameters.IfNoneMatch', rule: 'not_allowed' }],
      ],
    ];
    for (const [name, attempt, fields] of cases) {
      const error = await settle(attempt());
      expect(error, name).toBeInstanceOf(ValidationError);
      expect(
        (error as ValidationError).body.fields?.map(({ field, rule }) => ({ field, rule })),
        name,
      ).toEqual(fields);
    }
    expect(await stored('v1')).toBeUndefined();
  });
});

/**
 * On a real account (AWS_REAL_ACCOUNT=1 and AWS_REAL_ACCOUNT_BUCKET, a bucket of yours; credentials
 * and AWS_REGION as the SDK finds them): writers racing for real, where S3 may answer 409
 * ConditionalRequestConflict as well as 412, which moto never does.
 */
describe.skipIf(!process.env.AWS_REAL_ACCOUNT || !process.env.AWS_REAL_ACCOUNT_BUCKET)('on a real account', () => {
  const realBucket = process.env.AWS_REAL_ACCOUNT_BUCKET ?? '';
  let real: S3;
  beforeAll(() => {
    real = new S3({});
  });
  afterAll(() => real?.destroy());

  it('eight writers at once: the largest token stays; every other write landed before it, was refused, or gave up with S3’s 409 or 412', async () => {
    const key = uniqueName('fenced-race');
    const tokens = ['11', '12', '13', '14', '15', '16', '17', '18'];
    const outcomes = await Promise.allSettled(
      tokens.map((token) => fencedPutObject(real, { Bucket: realBucket, Key: key, fencingToken: token, Body: `by ${token}` })),
    );
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected' && !(outcome.reason instanceof FencedOutError)) {
        expect([409, 412]).toContain((outcome.reason as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode);
      }
    }
    if (outcomes.at(-1)!.status === 'fulfilled') expect(await stored(key, real, realBucket)).toMatchObject({ body: 'by 18', token: '18' });
    await expectFencedOut(
      fencedPutObject(real, { Bucket: realBucket, Key: key, fencingToken: '10', Body: 'late' }),
      key,
      '10',
      (await stored(key, real, realBucket))!.token!,
      realBucket,
    );
    await real.deleteObject({ Bucket: realBucket, Key: key });
  });
});
