import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError, ValidationError } from '../../packages/engine/src/errors.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, testClient } from '../support/engine.js';

let client: SearchClient;
let index: string;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'validation');
  engine = engineOn(client, index);
});
afterAll(async () => closeTestClient(client));

const valid = { namespace: 'ns', granularity: 'tree', path: '/a/b', owner: 'me' };
const documents = { namespace: 'ns', granularity: 'document', ids: ['x'], owner: 'me' };

const cases: Array<[string, Record<string, unknown>, string, string]> = [
  ['missing namespace', { ...valid, namespace: undefined }, 'namespace', 'required'],
  ['empty namespace', { ...valid, namespace: '' }, 'namespace', 'min'],
  ['namespace with a slash', { ...valid, namespace: 'a/b' }, 'namespace', 'format'],
  ['namespace too long', { ...valid, namespace: 'n'.repeat(65) }, 'namespace', 'max'],
  ['unknown granularity', { ...valid, granularity: 'row' }, 'granularity', 'one_of'],
  ['relative path', { ...valid, path: 'a/b' }, 'path', 'absolute_path'],
  ['root path', { ...valid, path: '/' }, 'path', 'not_root'],
  ['trailing slash', { ...valid, path: '/a/b/' }, 'path', 'no_trailing_slash'],
  ['empty segment', { ...valid, path: '/a//b' }, 'path', 'no_empty_segments'],
  ['dot-dot segment', { ...valid, path: '/a/../b' }, 'path', 'no_dot_segments'],
  ['dot segment', { ...valid, path: '/a/./b' }, 'path', 'no_dot_segments'],
  ['very long path', { ...valid, path: `/${'p/'.repeat(1_100)}p` }, 'path', 'too_long'],
  ['too deep path', { ...valid, path: `/${Array.from({ length: 40 }, () => 'd').join('/')}` }, 'path', 'too_deep'],
  ['long path segment', { ...valid, path: `/a/${'s'.repeat(300)}` }, 'path', 'segment_too_long'],
  ['control character in path', { ...valid, path: '/a/\u0007' }, 'path', 'no_control_characters'],
  ['lone surrogate in path', { ...valid, path: '/a/\ud800' }, 'path', 'well_formed_unicode'],
  ['path missing for tree', { ...valid, path: undefined }, 'path', 'required'],
  ['ids on a tree lock', { ...valid, ids: ['x'] }, 'ids', 'not_allowed'],
  ['ids missing for document', { ...documents, ids: undefined }, 'ids', 'required'],
  ['empty id list', { ...documents, ids: [] }, 'ids', 'min'],
  ['empty id', { ...documents, ids: ['ok', ''] }, 'ids.1', 'min'],
  ['duplicate id', { ...documents, ids: ['x', 'y', 'x'] }, 'ids.2', 'unique'],
  ['id too long', { ...documents, ids: ['i'.repeat(513)] }, 'ids.0', 'too_long'],
  ['too many ids', { ...documents, ids: Array.from({ length: 501 }, (_, i) => `i${i}`) }, 'ids', 'max'],
  ['path on a document lock', { ...documents, path: '/a' }, 'path', 'not_allowed'],
  ['path on a global lock', { namespace: 'ns', granularity: 'global', owner: 'me', path: '/a' }, 'path', 'not_allowed'],
  ['unknown mode', { ...valid, mode: 'write' }, 'mode', 'one_of'],
  ['ttl below the minimum', { ...valid, ttlMs: 999 }, 'ttlMs', 'min'],
  ['ttl above the maximum', { ...valid, ttlMs: 900_001 }, 'ttlMs', 'max'],
  ['fractional ttl', { ...valid, ttlMs: 1500.5 }, 'ttlMs', 'type'],
  ['ttl as a string', { ...valid, ttlMs: '30000' }, 'ttlMs', 'type'],
  ['negative wait', { ...valid, waitMs: -1 }, 'waitMs', 'min'],
  ['missing owner', { ...valid, owner: undefined }, 'owner', 'required'],
  ['owner too long', { ...valid, owner: 'o'.repeat(129) }, 'owner', 'max'],
  ['control character in owner', { ...valid, owner: 'a\nb' }, 'owner', 'no_control_characters'],
  ['requestId with spaces', { ...valid, requestId: 'a b' }, 'requestId', 'format'],
  ['unknown field', { ...valid, ttl: 5 }, 'ttl', 'unknown_field'],
];

describe('bad input', () => {
  it.each(cases)('%s is refused, naming the field and the rule', async (_, body, field, rule) => {
    const error = (await engine.acquire(body).catch((caught: unknown) => caught)) as ValidationError;
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.fields).toContainEqual(expect.objectContaining({ field, rule }));
  });

  it('changes nothing in the index', async () => {
    for (const [, body] of cases) await engine.acquire(body).catch(() => undefined);
    await client.indices.refresh({ index });
    expect((await client.count({ index })).count).toBe(0);
  });

  it('accepts unicode, long ids and deep paths that still map to valid document ids', async () => {
    const grant = await engine.acquire({
      namespace: 'ns',
      granularity: 'document',
      ids: ['日本語/ファイル.txt', 'é'.repeat(256), 'a'.repeat(512)],
      owner: 'Zoë',
    });
    const path = `/${Array.from({ length: 32 }, (_, i) => `段${i}`).join('/')}`;
    const deep = await engine.acquire({ namespace: 'ns', granularity: 'tree', path, owner: 'me' });
    expect(deep.keys.map((key) => key.key)).toEqual([path]);
    // 31 ancestors were checked (and marked) on the way: a lock at the top now sees it.
    await expect(engine.acquire({ namespace: 'ns', granularity: 'tree', path: '/段0', owner: 'other' })).rejects.toBeInstanceOf(LockHeldError);
    await engine.release({ leaseToken: grant.leaseToken });
    await engine.release({ leaseToken: deep.leaseToken });
  });

  it('a malformed or tampered lease token is a validation error on leaseToken', async () => {
    const grant = await engine.acquire({ ...documents, ids: ['tamper'] });
    const [prefix, , secret] = grant.leaseToken.split('.');
    const otherTarget = Buffer.from(JSON.stringify({ l: 'x'.repeat(22), n: '../etc', g: 'tree', k: 'relative', m: 'x' })).toString('base64url');
    for (const leaseToken of ['', 'nonsense', `${prefix}.${otherTarget}.${secret}`, `${prefix}.!!.${secret}`]) {
      const error = (await engine.release({ leaseToken }).catch((caught: unknown) => caught)) as ValidationError;
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.fields[0]?.field).toMatch(/^(leaseToken|namespace|path)$/);
    }
    await expect(engine.renew({ leaseToken: grant.leaseToken, ttlMs: 10 })).rejects.toBeInstanceOf(ValidationError);
    expect((await engine.release({ leaseToken: grant.leaseToken })).outcome).toBe('released');
  });
});
