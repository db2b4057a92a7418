/**
 * The granularities nest: a namespace's global lock is the root above its document ids and its tree
 * paths. A document or tree lock is an intention on that root (IX for exclusive, IS for shared), so a
 * global X excludes every lock in the namespace and a global S excludes its writers, and both wait
 * for live locks below them. On the real node; the races run many rounds and judge every pair of
 * holds by the compatibility table, written out here again.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { LockHeldError } from '../../packages/engine/src/errors.js';
import { compareFencingTokens } from '../../packages/engine/src/fencing.js';
import type { LockTarget, RequestedMode } from '../../packages/engine/src/model.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

const ROUNDS = Number(process.env.NESTING_RACE_ROUNDS ?? 10);
let client: SearchClient;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  engine = engineOn(client, await freshLockIndex(client, 'nesting'));
});
afterAll(async () => closeTestClient(client));

type Fields = { granularity: 'global' } | { granularity: 'document'; ids: string[] } | { granularity: 'tree'; path: string };
const lock = (namespace: string, fields: Fields, mode: RequestedMode, owner: string, extra: Record<string, unknown> = {}) => ({
  namespace,
  ...fields,
  mode,
  owner,
  ...extra,
});
const GLOBAL: Fields = { granularity: 'global' };
const refusal = async (promise: Promise<unknown>): Promise<LockHeldError> => {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(LockHeldError);
  return error as LockHeldError;
};

describe('the global lock is the root above ids and paths', () => {
  it('a global X is refused while a tree lock below is held, and names it', async () => {
    const namespace = 'fs';
    const file = await engine.acquire(lock(namespace, { granularity: 'tree', path: '/a/b' }, 'exclusive', 'editor'));
    await sleep(300); // established: older than the grace a lock above gives locks below that may be backing off
    const error = await refusal(engine.acquire(lock(namespace, GLOBAL, 'exclusive', 'migrator')));
    expect(error.conflicts).toMatchObject([{ key: '/a/b', granularity: 'tree', requestedMode: 'X', holders: [{ owner: 'editor', mode: 'X' }] }]);
    await engine.release({ leaseToken: file.leaseToken });
    const global = await engine.acquire(lock(namespace, GLOBAL, 'exclusive', 'migrator'));
    expect(compareFencingTokens(global.fencingToken, file.fencingToken)).toBe(1);
    await engine.release({ leaseToken: global.leaseToken });
  });

  it('while a global X is held, document and tree locks of the namespace are refused, naming it; other namespaces are not affected', async () => {
    const namespace = 'orders';
    // Ids were locked before, so the root is marked and the global lock looks below.
    await engine.release({ leaseToken: (await engine.acquire(lock(namespace, { granularity: 'document', ids: ['o-0'] }, 'exclusive', 'w'))).leaseToken });
    const global = await engine.acquire(lock(namespace, GLOBAL, 'exclusive', 'migrator', { ttlMs: 10_000 }));
    const below: Fields[] = [
      { granularity: 'document', ids: ['o-1'] },
      { granularity: 'tree', path: '/x' },
    ];
    for (const fields of below) {
      for (const mode of ['exclusive', 'shared'] as const) {
        const error = await refusal(engine.acquire(lock(namespace, fields, mode, 'writer')));
        expect(error.conflicts).toMatchObject([{ key: '*', granularity: 'global', holders: [{ owner: 'migrator', mode: 'X' }] }]);
      }
    }
    const elsewhere = await engine.acquire(lock('invoices', { granularity: 'document', ids: ['o-1'] }, 'exclusive', 'writer'));
    await engine.release({ leaseToken: elsewhere.leaseToken });
    // Nothing the refused calls wrote is left behind.
    expect(await engine.inspect({ namespace, granularity: 'document', ids: ['o-1'] })).toMatchObject([{ key: '*' }]);
    await engine.release({ leaseToken: global.leaseToken });
  });

  it('a global S lets readers in below and keeps writers out; a writer below keeps a global S waiting until it goes', async () => {
    const namespace = 'catalog';
    const reader = await engine.acquire(lock(namespace, GLOBAL, 'shared', 'reporter', { ttlMs: 10_000 }));
    const alongside = await engine.acquire(lock(namespace, { granularity: 'document', ids: ['p-1'] }, 'shared', 'other-reader'));
    await refusal(engine.acquire(lock(namespace, { granularity: 'document', ids: ['p-1'] }, 'exclusive', 'writer')));
    await refusal(engine.acquire(lock(namespace, { granularity: 'tree', path: '/p/q' }, 'exclusive', 'writer')));
    await engine.release({ leaseToken: alongside.leaseToken });
    await engine.release({ leaseToken: reader.leaseToken });

    const writer = await engine.acquire(lock(namespace, { granularity: 'document', ids: ['p-2'] }, 'exclusive', 'writer', { ttlMs: 10_000 }));
    setTimeout(() => void engine.release({ leaseToken: writer.leaseToken }), 400);
    const started = performance.now();
    const waited = await engine.acquire(lock(namespace, GLOBAL, 'shared', 'reporter', { waitMs: 5_000 }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(350);
    expect(compareFencingTokens(waited.fencingToken, writer.fencingToken)).toBe(1);
    await engine.release({ leaseToken: waited.leaseToken });
  });

  it('inspect of a document or a path shows the global holder above it', async () => {
    const namespace = 'shown';
    await engine.release({ leaseToken: (await engine.acquire(lock(namespace, { granularity: 'tree', path: '/s' }, 'exclusive', 'w'))).leaseToken });
    const global = await engine.acquire(lock(namespace, GLOBAL, 'shared', 'reporter'));
    const states = await engine.inspect({ namespace, granularity: 'tree', path: '/s/t' } as LockTarget);
    expect(states).toMatchObject([{ key: '*', granularity: 'global', holders: [{ owner: 'reporter', mode: 'S' }] }]);
    await engine.release({ leaseToken: global.leaseToken });
  });
});

interface Hold {
  kind: 'global' | 'below';
  mode: RequestedMode;
  token: string;
  from: number;
  to: number;
}

describe('global locks racing locks below them', () => {
  it(`never overlap with an incompatible lock below, and the later of two conflicting holds has the larger token (${ROUNDS} rounds)`, async () => {
    const namespace = 'race';
    const holds: Hold[] = [];
    const take = async (fields: Fields, mode: RequestedMode, holdMs: number): Promise<void> => {
      try {
        const grant = await engine.acquire(lock(namespace, fields, mode, fields.granularity, { waitMs: 3_000, ttlMs: 10_000 }));
        const from = performance.now();
        await sleep(holdMs);
        holds.push({ kind: fields.granularity === 'global' ? 'global' : 'below', mode, token: grant.fencingToken, from, to: performance.now() });
        await engine.release({ leaseToken: grant.leaseToken });
      } catch (error) {
        if (!(error instanceof LockHeldError)) throw error;
      }
    };
    for (let round = 0; round < ROUNDS; round++) {
      const mode: RequestedMode = round % 3 === 2 ? 'shared' : 'exclusive';
      await Promise.all([
        take(GLOBAL, mode, 30),
        ...Array.from({ length: 6 }, (_, worker) =>
          take(
            worker % 2 === 0 ? { granularity: 'document', ids: [`d-${worker}`, `d-${(worker + 1) % 6}`] } : { granularity: 'tree', path: `/t/${worker}` },
            worker === 3 ? 'shared' : 'exclusive',
            20,
          ),
        ),
      ]);
    }
    const problems: string[] = [];
    for (const a of holds.filter((entry) => entry.kind === 'global')) {
      for (const b of holds.filter((entry) => entry.kind === 'below')) {
        // Global S admits readers below (IS); everything else between the root and a lock below conflicts.
        if (a.mode === 'shared' && b.mode === 'shared') continue;
        if (Math.max(a.from, b.from) < Math.min(a.to, b.to)) problems.push(`global ${a.mode} and a ${b.mode} lock below held together`);
        const [first, second] = a.from <= b.from ? [a, b] : [b, a];
        if (compareFencingTokens(second.token, first.token) <= 0) problems.push(`a later hold got ${second.token} after ${first.token}`);
      }
    }
    expect(problems).toEqual([]);
    expect(holds.filter((entry) => entry.kind === 'global').length).toBeGreaterThan(ROUNDS / 2);
    expect(holds.filter((entry) => entry.kind === 'below').length).toBeGreaterThan(ROUNDS);
  }, 120_000);
});
