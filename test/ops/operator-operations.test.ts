/**
 * Break glass through the operator's CLI straight against the cluster (Elasticsearch, and OpenSearch
 * in the opensearch project): revoke takes a lock from its holder for good (its renew is refused, its
 * fenced writes lose to the next holder's), drain empties a queue, status counts what the index holds.
 */
import { randomBytes } from 'node:crypto';
import { Client as ElasticsearchClient } from '@elastic/elasticsearch';
import { FencedOutError, type FencedWritesClient, fencedIndex } from '@es-lease-locks/client';
import { Client as OpenSearchClient } from '@opensearch-project/opensearch';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { storeUrlVariable } from '../../infra/lib/store-target.js';
import { LeaseLostError, LockWaitExpiredError } from '../../packages/engine/src/errors.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';
import { ops, rowsOf } from './support.js';

let client: SearchClient;
let index: string;
let engine: LockService;
/** The user's own client, for fenced writes to the user's own index. */
let writes: FencedWritesClient & { close(): Promise<void> };
const data = `ops-fenced-data-${randomBytes(4).toString('hex')}`;
const product = inject('searchProduct');
let target: string[];

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'ops-admin');
  engine = engineOn(client, index);
  process.env[storeUrlVariable(product)] = inject('esUrl');
  const apiKey = inject('esApiKey');
  if (product === 'elasticsearch' && apiKey) process.env.ES_API_KEY = apiKey;
  target = ['--store', product, '--index', index];
  const nodes = inject('esUrl').split(',');
  writes = product === 'opensearch' ? new OpenSearchClient({ nodes }) : new ElasticsearchClient({ nodes, ...(apiKey ? { auth: { apiKey } } : {}) });
});
afterAll(async () => {
  await client.indices.delete({ index: data }, { ignore: [404] });
  await writes.close();
  await closeTestClient(client);
});

describe('revoke', () => {
  it('the revoked holder loses its lease for good: renew refused, release not held, the next holder fenced above it', async () => {
    const lock = { namespace: 'ops-revoke', granularity: 'document', ids: ['job-1'] } as const;
    const stuck = await engine.acquire({ ...lock, owner: 'stuck-worker', ttlMs: 600_000 });
    await fencedIndex(writes, { index: data, id: 'job-1', fencingToken: stuck.fencingToken, document: { by: 'stuck' } });

    const run = await ops(['revoke', 'ops-revoke/document/job-1', '--reason', 'stuck after a deploy', '--by', 'oncall', ...target]);
    expect(run.code, run.err).toBe(0);
    const [headline, header, row, fenced, handedOver] = run.out.split('\n');
    expect(headline).toBe('ops-revoke/document/job-1: revoked 1 lease (by oncall: stuck after a deploy)');
    expect(rowsOf(`${header}\n${row}`)).toEqual([
      ['KEY', 'OWNER', 'MODE', 'LEASE', 'FENCING TOKEN', 'WOULD HAVE EXPIRED'],
      ['job-1', 'stuck-worker', 'X', stuck.leaseId, stuck.fencingToken, expect.stringMatching(/^in (9m 5\ds|10m 0s)$/)],
    ]);
    const revokeToken = /^fencing token now (\d+): /.exec(fenced!)?.[1];
    expect(BigInt(revokeToken!)).toBeGreaterThan(BigInt(stuck.fencingToken));
    expect(handedOver).toBe('handed over to 0 waiters');

    await expect(engine.renew({ leaseToken: stuck.leaseToken })).rejects.toBeInstanceOf(LeaseLostError);
    expect((await engine.release({ leaseToken: stuck.leaseToken })).outcome).toBe('not_held');
    const next = await engine.acquire({ ...lock, owner: 'next-worker' });
    expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(revokeToken!));
    await fencedIndex(writes, { index: data, id: 'job-1', fencingToken: next.fencingToken, document: { by: 'next' } });
    await expect(fencedIndex(writes, { index: data, id: 'job-1', fencingToken: stuck.fencingToken, document: { by: 'stuck, late' } })).rejects.toBeInstanceOf(
      FencedOutError,
    );
    await engine.release({ leaseToken: next.leaseToken });
  });

  it('--json prints the revocation; a target nobody holds exits 3', async () => {
    const holder = await engine.acquire({ namespace: 'ops-revoke', granularity: 'global', owner: 'g' });
    const json = await ops(['revoke', '--namespace', 'ops-revoke', '--granularity', 'global', '--reason', 'test', '--json', ...target]);
    expect(json.code, json.err).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({
      target: { namespace: 'ops-revoke', granularity: 'global' },
      reason: 'test',
      by: expect.stringContaining('@'),
      revoked: [{ key: '*', owner: 'g', leaseId: holder.leaseId, mode: 'X', fencingToken: holder.fencingToken }],
      fencingToken: expect.stringMatching(/^\d+$/),
    });
    const nobody = await ops(['revoke', 'ops-revoke/global', '--reason', 'again', ...target]);
    expect(nobody).toEqual({ code: 3, out: 'ops-revoke/global: nobody held it; nothing revoked', err: '' });
  });
});

describe('drain', () => {
  it('takes every waiter out of the queue (a waiter in its call is out: its call answers the drain), the queue shown by inspect before', async () => {
    const holder = await engine.acquire({ namespace: 'ops-drain', granularity: 'global', owner: 'holder', ttlMs: 60_000 });
    const waiting = engine.acquire({ namespace: 'ops-drain', granularity: 'global', owner: 'waiter', waitMs: 4_000 }).catch((error: unknown) => error);
    // The waiter's ticket, as the QUEUED column of inspect shows it.
    let queued = '';
    for (let i = 0; i < 100 && queued !== '1'; i++) {
      await sleep(100);
      queued = rowsOf((await ops(['inspect', 'ops-drain/global', ...target])).out)[1]?.[7] ?? '';
    }
    expect(queued).toBe('1');

    const run = await ops(['drain', 'ops-drain/global', '--reason', 'maintenance', '--by', 'oncall', ...target]);
    expect(run.code, run.err).toBe(0);
    const [headline, ...table] = run.out.split('\n');
    expect(headline).toMatch(/^ops-drain\/global: drained 1 waiter, told \d+ \(by oncall: maintenance\)$/);
    expect(rowsOf(table.join('\n'))).toEqual([
      ['KEY', 'OWNER', 'TICKET'],
      ['*', 'waiter', expect.any(String)],
    ]);
    // Out of the queue: a waiter in its call hears the drain at its next look and never joins again.
    const drained = await waiting;
    expect(drained).toBeInstanceOf(LockWaitExpiredError);
    expect((drained as Error).message).toContain('drained by oncall (maintenance)');
    const again = await ops(['drain', 'ops-drain/global', '--reason', 'again', ...target]);
    expect(again).toEqual({ code: 3, out: 'ops-drain/global: nobody was queued; nothing drained', err: '' });
    await engine.release({ leaseToken: holder.leaseToken });
  });
});

describe('status', () => {
  it("the lock index's incarnation, epoch, shards, counts and oldest lease", async () => {
    const first = await engine.acquire({ namespace: 'ops-status', granularity: 'document', ids: ['a'], owner: 'oldest', ttlMs: 60_000 });
    await sleep(20);
    const second = await engine.acquire({ namespace: 'ops-status', granularity: 'document', ids: ['b'], owner: 'younger', ttlMs: 60_000 });
    await client.indices.refresh({ index });

    const json = await ops(['status', '--json', ...target]);
    expect(json.code, json.err).toBe(0);
    const answer = JSON.parse(json.out);
    expect(answer).toMatchObject({
      incarnation: expect.any(String),
      epoch: expect.any(Number),
      shards: { primaries: 1, replicas: expect.any(Number) },
      locks: 2,
      holders: 2,
      waiters: 0,
      oldestLease: { namespace: 'ops-status', granularity: 'document', key: 'a', owner: 'oldest', grantedAt: expect.any(Number) },
      complete: true,
    });

    const table = await ops(['status', ...target]);
    expect(table.code).toBe(0);
    const lines = Object.fromEntries(table.out.split('\n').map((line) => [line.split(':')[0], line.replace(/^[^:]+:\s+/, '')]));
    expect(lines.index).toBe(`${answer.index} (incarnation ${answer.incarnation}, epoch ${answer.epoch})`);
    expect(lines.locks).toBe('2');
    expect(lines['oldest lease']).toMatch(/^ops-status\/document a held by oldest, granted \d+(ms|s) ago, expires in \d+s$/);
    for (const grant of [first, second]) await engine.release({ leaseToken: grant.leaseToken });
  });
});
