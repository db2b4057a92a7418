/**
 * Fencing enforced by Elasticsearch for a document written under a lock (functions/store/fenced-document.ts),
 * on the real node: a holder paused past its lease is refused by the data store itself.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteFenced, excludeFencedTombstones, FENCED_TOMBSTONE_FIELD, isFencedTombstone, writeFenced } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { StaleFencingTokenError, ValidationError } from '../../packages/engine/src/errors.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

let client: SearchClient;
let engine: LockService;
const data = `fenced-data-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  client = testClient();
  engine = engineOn(client, await freshLockIndex(client, 'fenced'));
  await client.indices.create({ index: data });
});
afterAll(async () => {
  await client.indices.delete({ index: data }, { ignore: [404] });
  await closeTestClient(client);
});

const current = async (id: string) => (await client.get<{ by: string }>({ index: data, id }))._source?.by;

/** An index that forgets a delete's version at once (`index.gc_deletes: 0s`): what every index does after 60 s by default. */
async function forgetfulIndex(label: string): Promise<string> {
  const index = `${data}-${label}`;
  await client.indices.create({ index, settings: { 'index.gc_deletes': '0s', number_of_replicas: 0 } });
  return index;
}

describe('fenced writes to an Elasticsearch document', () => {
  it('a holder paused past its lease writes late and is refused; the holder that took over keeps its write', async () => {
    const target = { namespace: 'orders', granularity: 'document', ids: ['o-1'] } as const;
    const paused = await engine.acquire({ ...target, owner: 'paused', ttlMs: 1_000 });
    await writeFenced(client, { index: data, id: 'o-1', document: { by: 'paused, before the pause' }, fencingToken: paused.fencingToken });
    await sleep(1_100);
    const next = await engine.acquire({ ...target, owner: 'next' });
    expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(paused.fencingToken));
    await writeFenced(client, { index: data, id: 'o-1', document: { by: 'next' }, fencingToken: next.fencingToken });
    const late = await writeFenced(client, { index: data, id: 'o-1', document: { by: 'paused, after the pause' }, fencingToken: paused.fencingToken }).catch(
      (error: unknown) => error,
    );
    expect(late).toBeInstanceOf(StaleFencingTokenError);
    expect(await current('o-1')).toBe('next');
    await expect(deleteFenced(client, { index: data, id: 'o-1', fencingToken: paused.fencingToken })).rejects.toBeInstanceOf(StaleFencingTokenError);
    expect((await deleteFenced(client, { index: data, id: 'o-1', fencingToken: next.fencingToken })).deleted).toBe(true);
    await engine.release({ leaseToken: next.leaseToken });
  });

  it('one holder may write the same document several times under one grant', async () => {
    const grant = await engine.acquire({ namespace: 'orders', granularity: 'document', ids: ['o-2'], owner: 'worker' });
    for (const step of ['first', 'second']) await writeFenced(client, { index: data, id: 'o-2', document: { by: step }, fencingToken: grant.fencingToken });
    expect(await current('o-2')).toBe('second');
    await engine.release({ leaseToken: grant.leaseToken });
  });

  it('compares tokens past 2^53 exactly (sent as decimal strings, never as JSON numbers)', async () => {
    // 2^53 + 1 and 2^53 are one number to a JSON parser; Elasticsearch must see them differ.
    await writeFenced(client, { index: data, id: 'big', document: { by: 'newer' }, fencingToken: '9007199254740993' });
    await expect(writeFenced(client, { index: data, id: 'big', document: { by: 'older' }, fencingToken: '9007199254740992' })).rejects.toBeInstanceOf(
      StaleFencingTokenError,
    );
    expect(await current('big')).toBe('newer');
  });

  // Issue 30 item 8. Fails on the implementation before it (a real delete with external_gte): once
  // gc_deletes pruned the delete's version, the write with the older token was accepted ('created'),
  // and the resource's fence went backwards.
  it('a fenced delete keeps fencing after Elasticsearch forgot deletes (gc_deletes): an older token is refused for good', async () => {
    const index = await forgetfulIndex('gc');
    try {
      // Tokens of epoch 0, primary term 1: below 2^53, so that `_version` reads back exactly.
      const older = '10000000000005';
      const newer = '10000000000009';
      await writeFenced(client, { index, id: 'd-1', document: { by: 'newer' }, fencingToken: newer });
      expect((await deleteFenced(client, { index, id: 'd-1', fencingToken: newer })).deleted).toBe(true);
      // Past gc_deletes (0 s here), with a refresh, which is when Elasticsearch prunes what it remembers of deletes.
      await sleep(50);
      await client.indices.refresh({ index });
      const late = await writeFenced(client, { index, id: 'd-1', document: { by: 'older, after a long pause' }, fencingToken: older }).catch(
        (error: unknown) => error,
      );
      expect(late).toBeInstanceOf(StaleFencingTokenError);
      await expect(deleteFenced(client, { index, id: 'd-1', fencingToken: older })).rejects.toBeInstanceOf(StaleFencingTokenError);

      // What is left is a tombstone, versioned with the deleting token, that readers treat as absent.
      const stored = await client.get<Record<string, unknown>>({ index, id: 'd-1' });
      expect(String(stored._version)).toBe(newer);
      expect(isFencedTombstone(stored._source)).toBe(true);
      expect(Object.keys(stored._source ?? {})).toEqual([FENCED_TOMBSTONE_FIELD]);

      // A newer holder writes the id again; searches that exclude tombstones see only live documents.
      await writeFenced(client, { index, id: 'd-2', document: { by: 'live' }, fencingToken: older });
      await deleteFenced(client, { index, id: 'never-written', fencingToken: older }).then(({ deleted }) => expect(deleted).toBe(false));
      await client.indices.refresh({ index });
      const live = await client.search<Record<string, unknown>>({ index, query: excludeFencedTombstones });
      expect(live.hits.hits.map((hit) => hit._id)).toEqual(['d-2']);
      const reborn = '10000000000012';
      await writeFenced(client, { index, id: 'd-1', document: { by: 'a later holder' }, fencingToken: reborn });
      const again = await client.get<Record<string, unknown>>({ index, id: 'd-1' });
      expect(isFencedTombstone(again._source)).toBe(false);
      expect(again._source).toEqual({ by: 'a later holder' });
    } finally {
      await client.indices.delete({ index }, { ignore: [404] });
    }
  });

  // Issue 41 (seen in the code): the server-side write took a document carrying the tombstone's field,
  // which every reader then treats as deleted. Refused before any request, by field and rule, as the
  // client's fencedWrite refuses it.
  it('a document carrying the tombstone’s field is refused and nothing is written', async () => {
    const grant = await engine.acquire({ namespace: 'orders', granularity: 'document', ids: ['o-tomb'], owner: 'writer' });
    const refused = await writeFenced(client, {
      index: data,
      id: 'o-tomb',
      document: { by: 'writer', [FENCED_TOMBSTONE_FIELD]: new Date().toISOString() },
      fencingToken: grant.fencingToken,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).fields).toEqual([{ field: `document.${FENCED_TOMBSTONE_FIELD}`, rule: 'not_allowed', message: expect.any(String) }]);
    expect((await client.get({ index: data, id: 'o-tomb' }, { ignore: [404] })).found).toBe(false);
    await engine.release({ leaseToken: grant.leaseToken });
  });
});
