/**
 * Fencing enforced by Elasticsearch for a document written under a lock (functions/store/fenced-document.ts),
 * on the real node: a holder paused past its lease is refused by the data store itself.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StaleFencingTokenError } from '../../functions/core/errors.js';
import type { LockService } from '../../functions/core/service.js';
import { deleteFenced, writeFenced } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
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
});
