/**
 * A granularity is one module and one registry line: a toy "tenant" granularity, registered in this
 * file alone (one lock per tenant id, named by `ids: [tenant]`, below the namespace's root like a
 * document lock), gets the engine's whole lock contract on the real node with no other change:
 * request validation, planning, lease tokens, the root's intention and the global lock's search below.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { targetMode } from '../../packages/engine/src/compatibility.js';
import { LockHeldError } from '../../packages/engine/src/errors.js';
import { compareFencingTokens } from '../../packages/engine/src/fencing.js';
import { confirmScope, type GranularityRules, ROOT, registerGranularity, scopeHold } from '../../packages/engine/src/granularity/index.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, sleep, testClient } from '../support/engine.js';

interface TenantTarget {
  namespace: string;
  granularity: 'tenant';
  tenant: string;
}

const tenantRules: GranularityRules<TenantTarget> = {
  name: 'tenant',
  tag: 'n',
  field: 'ids',
  check(input, ctx) {
    if (input.ids?.length !== 1) ctx.addIssue({ code: 'custom', path: ['ids'], message: 'names exactly one tenant', params: { rule: 'one_tenant' } });
  },
  target: (namespace, input) => ({ namespace, granularity: 'tenant', tenant: input.ids?.[0] ?? '' }),
  plan: (target, mode) => [{ key: target.tenant, mode: targetMode(mode) }],
  guards: () => [ROOT],
  below: () => undefined,
  confirm: (context, held) => confirmScope(context, scopeHold(context, held, tenantRules.describe(held.target), [ROOT])),
  toFields: (target) => ({ ids: [target.tenant] }),
  identity: (target) => target.tenant,
  describe: (target) => `${target.namespace} tenant ${target.tenant}`,
  logKey: (fields) => fields.ids?.[0] ?? '',
};

// Before the engine is made: its request schemas take the granularities known then.
registerGranularity(tenantRules);

let client: SearchClient;
let engine: LockService;

beforeAll(async () => {
  client = testClient();
  engine = engineOn(client, await freshLockIndex(client, 'tenant'));
});
afterAll(async () => closeTestClient(client));

const tenantLock = (namespace: string, tenant: string, owner: string) => ({ namespace, granularity: 'tenant', ids: [tenant], owner, ttlMs: 10_000 });
const globalLock = (namespace: string, owner: string) => ({ namespace, granularity: 'global', owner, ttlMs: 10_000 });

const refusal = (promise: Promise<unknown>): Promise<LockHeldError> =>
  promise.then(
    () => expect.fail('granted, not refused'),
    (error: unknown) => {
      expect(error).toBeInstanceOf(LockHeldError);
      return error as LockHeldError;
    },
  );

describe('a granularity registered by a test', () => {
  it('is refused with a field that is not its own, and without its own', async () => {
    await expect(engine.acquire({ namespace: 'shop', granularity: 'tenant', path: '/acme', owner: 'a' })).rejects.toMatchObject({
      fields: expect.arrayContaining([
        expect.objectContaining({ field: 'path', rule: 'not_allowed', message: 'is only allowed for the tree granularity' }),
        expect.objectContaining({ field: 'ids', rule: 'one_tenant' }),
      ]),
    });
  });

  it('takes one lock per tenant: a second acquire conflicts, a release frees it, the next grant has a larger fencing token', async () => {
    const first = await engine.acquire(tenantLock('shop', 'acme', 'first'));
    expect(first).toMatchObject({ target: { namespace: 'shop', granularity: 'tenant', tenant: 'acme' }, keys: [{ key: 'acme', mode: 'X' }] });
    const error = await refusal(engine.acquire(tenantLock('shop', 'acme', 'second')));
    expect(error.conflicts).toMatchObject([{ key: 'acme', granularity: 'tenant', holders: [{ owner: 'first', mode: 'X' }] }]);
    // Another tenant is another lock.
    await engine.release({ leaseToken: (await engine.acquire(tenantLock('shop', 'globex', 'second'))).leaseToken });
    // Its lease token names the tenant: renew and release read the target back from it.
    const renewed = await engine.renew({ leaseToken: first.leaseToken, ttlMs: 10_000 });
    expect(renewed.fencingToken).toBe(first.fencingToken);
    expect(await engine.release({ leaseToken: renewed.leaseToken })).toMatchObject({ outcome: 'released', releasedKeys: ['acme'] });
    const again = await engine.acquire(tenantLock('shop', 'acme', 'second'));
    expect(compareFencingTokens(again.fencingToken, first.fencingToken)).toBe(1);
    await engine.release({ leaseToken: again.leaseToken });
  });

  it("sits below the namespace's root: a global X excludes it, and waits for (or is refused by) a tenant lock", async () => {
    const tenant = await engine.acquire(tenantLock('mall', 'acme', 'tenant-writer'));
    await sleep(300); // established: older than the grace a lock above gives locks below that may be backing off
    // The root was marked by the tenant lock: the global lock's search below finds it.
    const error = await refusal(engine.acquire(globalLock('mall', 'migrator')));
    expect(error.conflicts).toMatchObject([{ key: 'acme', granularity: 'tenant', requestedMode: 'X', holders: [{ owner: 'tenant-writer', mode: 'X' }] }]);
    await engine.release({ leaseToken: tenant.leaseToken });

    const global = await engine.acquire(globalLock('mall', 'migrator'));
    expect(compareFencingTokens(global.fencingToken, tenant.fencingToken)).toBe(1);
    const below = await refusal(engine.acquire(tenantLock('mall', 'acme', 'tenant-writer')));
    expect(below.conflicts).toMatchObject([{ key: '*', granularity: 'global', holders: [{ owner: 'migrator', mode: 'X' }] }]);
    await engine.release({ leaseToken: global.leaseToken });

    const after = await engine.acquire(tenantLock('mall', 'acme', 'tenant-writer'));
    expect(compareFencingTokens(after.fencingToken, global.fencingToken)).toBe(1);
    await engine.release({ leaseToken: after.leaseToken });
  });
});
