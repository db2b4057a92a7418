import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, testClient } from '../support/engine.js';

let client: SearchClient;
let index: string;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'list');
  engine = engineOn(client, index);
});
afterAll(async () => closeTestClient(client));

describe('inspect and list', () => {
  it('inspect tells who holds each key of a target, and each ancestor that can block it, in real time, without secrets', async () => {
    const grant = await engine.acquire({ namespace: 'look', granularity: 'tree', path: '/a/b', mode: 'shared', owner: 'reader' });
    const directory = await engine.acquire({ namespace: 'look', granularity: 'tree', path: '/a', mode: 'shared', owner: 'dir-reader' });
    const states = await engine.inspect({ namespace: 'look', granularity: 'tree', path: '/a/b' });
    expect(states.map((state) => [state.key, state.holders[0]?.mode, state.holders[0]?.owner])).toEqual([
      ['/a', 'S', 'dir-reader'],
      ['/a/b', 'S', 'reader'],
    ]);
    expect(JSON.stringify(states)).not.toContain(grant.leaseToken.split('.')[2]);
    expect(states.every((state) => state.holders.every((holder) => BigInt(holder.fencingToken) > 0n))).toBe(true);
    for (const lease of [grant, directory]) await engine.release({ leaseToken: lease.leaseToken });
    expect(await engine.inspect({ namespace: 'look', granularity: 'tree', path: '/a/b' })).toEqual([]);
  });

  it('list finds locks by namespace, owner and path prefix once the index has refreshed', async () => {
    const grants = await Promise.all([
      engine.acquire({ namespace: 'listing', granularity: 'tree', path: '/projects/es/readme', owner: 'alice' }),
      engine.acquire({ namespace: 'listing', granularity: 'tree', path: '/projects/kibana', owner: 'bob' }),
      engine.acquire({ namespace: 'listing', granularity: 'tree', path: '/projectsX', owner: 'bob' }),
      engine.acquire({ namespace: 'other', granularity: 'global', owner: 'alice' }),
    ]);
    await client.indices.refresh({ index });
    const keys = async (query: Parameters<LockService['list']>[0]) => (await engine.list(query)).map((state) => state.key).sort();
    expect(await keys({ namespace: 'listing', pathPrefix: '/projects/es' })).toEqual(['/projects/es/readme']);
    expect(await keys({ namespace: 'listing', pathPrefix: '/projects' })).toEqual(['/projects/es/readme', '/projects/kibana']);
    expect(await keys({ owner: 'bob' })).toEqual(['/projects/kibana', '/projectsX']);
    expect(await keys({ namespace: 'other' })).toEqual(['*']);
    for (const grant of grants) await engine.release({ leaseToken: grant.leaseToken });
  });
});
