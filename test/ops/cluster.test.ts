/**
 * The operator's CLI straight against the cluster (the project's Elasticsearch, and OpenSearch in the
 * opensearch project): locks taken with a LockService, then looked at, swept (and, with the service's
 * operator operations, revoked) through the CLI's main function; one spawn of the real command for
 * its exit codes and output streams.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SearchClient } from '../../functions/store/search-client.js';
import { storeUrlVariable } from '../../infra/lib/store-target.js';
import type { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, engineOn, freshLockIndex, testClient } from '../support/engine.js';
import { ops, rowsOf } from './support.js';

let client: SearchClient;
let index: string;
let engine: LockService;
const product = inject('searchProduct');
/** What points the CLI at this project's server and lock index. */
let target: string[];

beforeAll(async () => {
  client = testClient();
  index = await freshLockIndex(client, 'ops');
  engine = engineOn(client, index);
  // The CLI reads the server's URL variable as the other commands do.
  process.env[storeUrlVariable(product)] = inject('esUrl');
  if (product === 'elasticsearch' && inject('esApiKey')) process.env.ES_API_KEY = inject('esApiKey');
  target = ['--store', product, '--index', index];
});
afterAll(async () => closeTestClient(client));

describe('list and inspect', () => {
  it('list shows each holder with its mode, relative expiry, fencing token and queue length; --json the API answer', async () => {
    const tree = await engine.acquire({ namespace: 'ops-list', granularity: 'tree', path: '/a/b', owner: 'alice', ttlMs: 30_000 });
    const readers = await Promise.all(
      ['bob', 'carol'].map((owner) => engine.acquire({ namespace: 'ops-list', granularity: 'document', ids: ['d-1'], mode: 'shared', owner, ttlMs: 60_000 })),
    );
    await client.indices.refresh({ index });

    const table = await ops(['list', '--namespace', 'ops-list', ...target]);
    expect(table.code, table.err).toBe(0);
    const [header, ...rows] = rowsOf(table.out);
    expect(header).toEqual(['NAMESPACE', 'GRANULARITY', 'KEY', 'OWNER', 'MODE', 'EXPIRES', 'FENCING TOKEN', 'QUEUED']);
    const byOwner = Object.fromEntries(rows.filter((row) => row.length === 8).map((row) => [row[3], row]));
    expect(byOwner.alice).toEqual(['ops-list', 'tree', '/a/b', 'alice', 'X', expect.stringMatching(/^in (2\d|30)s$/), tree.fencingToken, '0']);
    expect(byOwner.bob?.slice(0, 5)).toEqual(['ops-list', 'document', 'd-1', 'bob', 'S']);
    expect(byOwner.carol?.[5]).toMatch(/^in (59s|1m 0s)$/);
    expect(table.out).toMatch(/\n2 locks, 3 holders$/);

    const json = await ops(['list', '--namespace', 'ops-list', '--owner', 'alice', '--json', ...target]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toEqual({
      locks: [
        {
          key: '/a/b',
          namespace: 'ops-list',
          granularity: 'tree',
          holders: [{ owner: 'alice', mode: 'X', fencingToken: tree.fencingToken, expiresAt: expect.any(String), expiresAtMs: tree.expiresAt, expired: false }],
          waiters: 0,
        },
      ],
    });

    const none = await ops(['list', '--namespace', 'ops-nobody', ...target]);
    expect(none).toEqual({ code: 3, out: 'no live locks found', err: '' });
    for (const grant of [tree, ...readers]) await engine.release({ leaseToken: grant.leaseToken });
  });

  it('inspect takes the short target form or the flags, shows the locks above that can block it, and exits 3 on a free target', async () => {
    const directory = await engine.acquire({ namespace: 'ops-inspect', granularity: 'tree', path: '/a', mode: 'shared', owner: 'dir-reader' });
    const file = await engine.acquire({ namespace: 'ops-inspect', granularity: 'tree', path: '/a/b', mode: 'shared', owner: 'reader' });

    const table = await ops(['inspect', 'ops-inspect/tree//a/b', ...target]);
    expect(table.code, table.err).toBe(0);
    expect(rowsOf(table.out).map((row) => row.slice(2, 5))).toEqual([
      ['KEY', 'OWNER', 'MODE'],
      ['/a', 'dir-reader', 'S'],
      ['/a/b', 'reader', 'S'],
    ]);
    const byFlags = await ops(['inspect', '--namespace', 'ops-inspect', '--granularity', 'tree', '--path', '/a/b', '--json', ...target]);
    expect(JSON.parse(byFlags.out).locks.map((lock: { key: string }) => lock.key)).toEqual(['/a', '/a/b']);

    for (const grant of [directory, file]) await engine.release({ leaseToken: grant.leaseToken });
    const free = await ops(['inspect', 'ops-inspect/document/x,y', ...target]);
    expect(free).toEqual({ code: 3, out: 'ops-inspect/document/x,y: free (nobody holds it, nor a lock above it)', err: '' });
    expect(JSON.parse((await ops(['inspect', 'ops-inspect/global', '--json', ...target])).out)).toEqual({ locks: [] });
  });
});

describe('bad arguments: exit 2, one line naming the argument', () => {
  it.each([
    [['frobnicate'], /^error: frobnicate: unknown command \(the commands: list, inspect, revoke, drain, sweep, status\)/],
    [['list', '--limit', '0'], /^error: --limit: must be a whole number from 1 to 1000 \(got "0"\)/],
    [['list', '--mode', 'shared'], /^error: --mode: not a flag of list/],
    [['inspect'], /^error: a target is needed: NAMESPACE\/global/],
    [['inspect', 'orders/bogus/x'], /^error: target "orders\/bogus\/x": the granularity must be global, document, tree \(got "bogus"\)/],
    [['inspect', 'orders/tree/a/b'], /^error: target "orders\/tree\/a\/b": a tree target names a path starting with "\/"/],
    [['inspect', 'orders/global', '--namespace', 'orders'], /^error: --namespace: not with a target argument/],
    [['inspect', 'orders/global', '--mode', 'both'], /^error: --mode: must be exclusive or shared \(got "both"\)/],
    [['revoke', 'orders/global'], /^error: --reason: needed: why you revoke the lock/],
    [['drain', 'orders/document/o-1', '--reason', ' '], /^error: --reason: needed: why you drain the lock/],
    [['sweep', '--stage', 'prod', 'x'], /^error: x: unexpected argument \(sweep takes flags only\)/],
    [['list', '--stage', 'prod'], /^error: --stage: only for sweep/],
    [['list', '--url', 'not a url'], /^error: --url: must be the API's http\(s\) URL/],
    [['list', '--unsigned'], /^error: --unsigned: only with --url/],
    [['status', '--region', 'eu-west-1'], /^error: --region: only with --url, --stage or --sweeper-function/],
    [
      ['sweep', '--url', 'https://abc.execute-api.eu-west-1.amazonaws.com'],
      /^error: --stage or --sweeper-function: sweep on a stage invokes its sweeper function/,
    ],
    [['sweep', '--stage', 'prod', '--sweeper-function', 'f'], /^error: --stage and --sweeper-function: give one/],
  ])('%j', async (argv, message) => {
    const run = await ops([...argv, ...target]);
    expect(run.code).toBe(2);
    expect(run.err.split('\n')).toHaveLength(1);
    expect(run.err).toMatch(message);
    expect(run.err).toMatch(/\(see --help\)$/);
    expect(run.out).toBe('');
  });

  it('LOCKS_URL is checked like --url', async () => {
    const run = await ops(['list'], { LOCKS_URL: 'ftp://example.com' });
    expect(run).toMatchObject({ code: 2, out: '' });
    expect(run.err).toBe(
      'error: LOCKS_URL: must be the API\'s http(s) URL, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com (got "ftp://example.com") (see --help)',
    );
  });

  it("the service's own rule (a namespace it does not take) is a usage mistake too", async () => {
    const run = await ops(['inspect', 'no spaces/global', ...target]);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/^error: Invalid request: namespace: .*\(see --help\)$/);
  });
});

describe('failures', () => {
  it('an unreachable cluster: exit 1, one line naming it', async () => {
    const saved = process.env[storeUrlVariable(product)];
    process.env[storeUrlVariable(product)] = 'http://127.0.0.1:9';
    try {
      const run = await ops(['list', ...target]);
      expect(run.code).toBe(1);
      expect(run.err).toMatch(/^error: cannot reach (Elasticsearch|OpenSearch) at http:\/\/127\.0\.0\.1:9: connection refused \(ECONNREFUSED\)$/);
    } finally {
      process.env[storeUrlVariable(product)] = saved;
    }
  });
});

describe('sweep', () => {
  it('runs a sweep now and prints its report', async () => {
    const run = await ops(['sweep', ...target]);
    expect(run.code, run.err).toBe(0);
    expect(rowsOf(run.out).map((row) => row[0]?.split(':')[0])).toEqual(['scanned', 'locks deleted', 'holders pruned', 'handed over', 'conflicts', 'batches']);
    expect(Object.keys(JSON.parse((await ops(['sweep', '--json', ...target])).out)).sort()).toEqual(
      ['batches', 'conflicts', 'deletedLocks', 'handedOver', 'prunedHolders', 'scanned'].sort(),
    );
  });
});

// The command is the same whatever the store: once is enough.
describe.skipIf(product === 'opensearch')('the command itself', () => {
  it('npx es-lease-locks: help on stdout (exit 0); a usage mistake on stderr, one line (exit 2)', async () => {
    const run = promisify(execFile);
    const help = await run('npx', ['es-lease-locks', '--help'], { cwd: process.cwd() });
    expect(help.stdout).toMatch(/^usage: npx es-lease-locks <command>/);
    expect(help.stdout).toMatch(/Exit codes:\n {2}0 {2}done/);
    const usage = await run('npx', ['es-lease-locks', 'revoke', 'orders/global'], { cwd: process.cwd() }).catch((error: unknown) => error as never);
    expect(usage).toMatchObject({ code: 2, stdout: '' });
    expect((usage as { stderr: string }).stderr.trim().split('\n')).toEqual([expect.stringMatching(/^error: --reason: needed/)]);
  });
});
