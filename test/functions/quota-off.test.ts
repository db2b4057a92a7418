/**
 * Without a quota configured (the default), an acquire costs what it cost before quotas existed: no
 * count of live locks, no search at all. (authorization.test.ts checks the one search a quota adds.)
 */
import { describe, expect, it } from 'vitest';
import { functionsUnderTest } from '../support/functions.js';
import { lambdaContext } from '../support/lambda-events.js';
import { requestsDuring } from '../support/requests.js';

const { handlers } = await functionsUnderTest({ label: 'quota-off' });

describe('no quota configured', () => {
  it('an acquire and its release make no search of the lock index', async () => {
    // The container's first call creates the lock index: keep it out of the count.
    const first = (await handlers.acquire({ namespace: 'warm', granularity: 'global', owner: 'me' }, lambdaContext('acquire'))) as { leaseToken: string };
    await handlers.release({ leaseToken: first.leaseToken }, lambdaContext('release'));
    const paths = await requestsDuring(async () => {
      const grant = (await handlers.acquire({ namespace: 'plain', granularity: 'document', ids: ['p-1', 'p-2'], owner: 'me' }, lambdaContext('acquire'))) as {
        leaseToken: string;
      };
      await handlers.release({ leaseToken: grant.leaseToken }, lambdaContext('release'));
    });
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.filter((path) => /_search|_count/.test(path))).toEqual([]);
  });
});
