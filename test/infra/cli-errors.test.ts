/**
 * What a person sees when a command is called wrongly or a service does not answer: the real commands,
 * spawned (the usage mistakes and --help all in one process: test/support/command-batch.ts, checked
 * against commands spawned alone). A usage mistake is one line naming the flag and the rule, exit 2; an unreachable
 * Elasticsearch says where it was tried, what failed and what to do, exit 1; stack traces only with --verbose.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createElasticsearchClient, deleteLockIndex } from '../../functions/store/index.js';
import { type EsTarget, resolveOpenSearch } from '../../infra/es/target.js';
import { describeServer } from '../../infra/lib/server-info.js';
import { chooseStore, storeAt } from '../../infra/lib/store-target.js';
import { numberFlag, parseFlags, UsageError } from '../../tools/cli/flags.js';
import { briefly, childFailed, describeFailure } from '../../tools/cli/run-cli.js';
import { explainServiceError, networkProblem, ServiceError } from '../../tools/cli/service-errors.js';
import { ROOT } from '../loadtest/run.js';
import type { BatchCase, BatchOutcome } from '../support/command-batch.js';

const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');

/** What a new user has not set: no server of their own, no store choice, no DEBUG. */
const USER_SETTINGS = ['ES_URL', 'ES_API_KEY', 'OPENSEARCH_URL', 'LOCK_STORE', 'DEBUG', 'PORT', 'LAMBDA_PORT', 'BENCH_ROUNDS'];

/** The environment of a new user (see USER_SETTINGS), with `env` on top. */
function command(script: string, args: string[], env: Record<string, string> = {}): { code: number | null; stderr: string; stdout: string } {
  const base = { ...process.env };
  for (const name of USER_SETTINGS) delete base[name];
  const result = spawnSync(process.execPath, [TSX, script, ...args], { cwd: ROOT, env: { ...base, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stderr: result.stderr, stdout: result.stdout };
}

/** The same, without blocking this process: for commands that talk to a fake server running here. */
function commandAsync(script: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const base = { ...process.env };
  for (const name of USER_SETTINGS) delete base[name];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX, script, ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, stdout });
    });
  });
}

const STACK_LINE = /^\s+at /m;

/** A local HTTP server answering every request with `answer`; its URL. */
async function fakeServer(
  answer: (request: import('node:http').IncomingMessage, response: import('node:http').ServerResponse) => void,
): Promise<{ url: string; server: Server }> {
  const server = createServer(answer);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** What a secured Elasticsearch answers to a key it does not accept (401) or one without the privilege (403). */
const securityAnswer = (status: number) => (_request: import('node:http').IncomingMessage, response: import('node:http').ServerResponse) => {
  response.writeHead(status, { 'content-type': 'application/json', 'x-elastic-product': 'Elasticsearch' });
  response.end(JSON.stringify({ error: { type: 'security_exception', reason: 'nope' }, status }));
};

const closeAll = (servers: Server[]) => Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));

/** The commands whose --help is checked. */
const HELP_CASES = [
  ['loadtests/runner/commands/loadtest.ts'],
  ['infra/index/cli.ts'],
  ['infra/es/cli.ts'],
  ['infra/es/cluster-cli.ts'],
  ['faults/run.ts'],
  ['bench/engine.ts'],
  ['loadtests/runner/commands/loadtest-waiting.ts'],
  ['scripts/cold-start.ts'],
  ['scripts/dev.ts'],
  ['loadtests/runner/commands/k6-install.ts'],
  ['loadtests/runner/commands/loadtest-model.ts'],
  ['loadtests/runner/commands/signing-overhead.ts'],
] as const;

/** Runs `cases` in one spawned process (test/support/command-batch.ts), each in a new user's environment (USER_SETTINGS) with its `env` on top. */
async function commandBatch(cases: Array<{ script: string; args: string[]; env?: Record<string, string> }>): Promise<BatchOutcome[]> {
  const base = { ...process.env } as Record<string, string>;
  for (const name of USER_SETTINGS) delete base[name];
  const dir = mkdtempSync(join(tmpdir(), 'command-batch-'));
  try {
    const casesFile = join(dir, 'cases.json');
    const outcomesFile = join(dir, 'outcomes.json');
    const batch: BatchCase[] = cases.map(({ script, args, env }) => ({ script, args, env: { ...base, ...env } }));
    writeFileSync(casesFile, JSON.stringify(batch));
    await promisify(execFile)(process.execPath, [TSX, join(ROOT, 'test/support/command-batch.ts'), casesFile, outcomesFile], {
      cwd: ROOT,
      env: base,
      timeout: 300_000,
    });
    return JSON.parse(readFileSync(outcomesFile, 'utf8')) as BatchOutcome[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('usage mistakes: one line naming the flag and the rule, exit 2', () => {
  const cases: Array<{ script: string; args: string[]; env?: Record<string, string>; says: RegExp }> = [
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag \(see --help\)$/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--rate', '-5'], says: /^error: --rate: must be a number > 0 \(got "-5"\)/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--rate', 'abc'], says: /^error: --rate: must be a number > 0 \(got "abc"\)/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--duration', '1.5'], says: /^error: --duration: must be a whole number >= 1 \(got "1.5"\)/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--smoke', 'now'], says: /^error: now: unexpected argument/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--rate'], says: /^error: --rate: needs a value/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--trials', '1.5'], says: /^error: --trials: must be a whole number \(got "1.5"\)/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--trials', '0'], says: /^error: invalid configuration: trials must be 1\.\.20 \(got 0\)/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--nodes', '0'], says: /^error: --nodes: must be a whole number >= 1 \(got "0"\)/ },
    {
      script: 'loadtests/runner/commands/loadtest.ts',
      args: ['--ttl-ms', '5'],
      says: /^error: --ttl-ms: must be a whole number from 1000 to 900000 \(got "5"\)/,
    },
    {
      script: 'loadtests/runner/commands/loadtest.ts',
      args: ['--trace-speed', '0'],
      says: /^error: --trace-speed: must be a number in \(0, 1000\] \(got "0"\)/,
    },
    {
      script: 'loadtests/runner/commands/loadtest.ts',
      args: ['--config', '/nonexistent/loadtest.json'],
      says: /^error: --config \/nonexistent\/loadtest\.json: no such file/,
    },
    {
      script: 'loadtests/runner/commands/loadtest.ts',
      args: ['--smoke'],
      env: { ES_URL: 'localhost:9200' },
      says: /^error: ES_URL: must be an http\(s\) URL .*\(got "localhost:9200"\)/,
    },
    { script: 'loadtests/runner/commands/loadtest-model.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    {
      script: 'loadtests/runner/commands/loadtest-model.ts',
      args: ['--probe-seconds', '0'],
      says: /^error: --probe-seconds: must be a whole number from 1 to 60 \(got "0"\)/,
    },
    {
      script: 'loadtests/runner/commands/loadtest-model.ts',
      args: ['--trials', '2.5'],
      says: /^error: --trials: must be a whole number from 1 to 20 \(got "2.5"\)/,
    },
    {
      script: 'loadtests/runner/commands/loadtest-model.ts',
      args: ['--granularities', 'tree,,global'],
      says: /^error: --granularities: an empty item in "tree,,global": expected granularity names separated by commas \(global, document, tree\)/,
    },
    {
      script: 'loadtests/runner/commands/loadtest-model.ts',
      args: ['--strategies', 'row'],
      says: /^error: --strategies: unknown granularity "row" \(global, document, tree\)/,
    },
    { script: 'bench/engine.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'bench/engine.ts', args: [], env: { BENCH_ROUNDS: '0' }, says: /^error: BENCH_ROUNDS: must be a whole number >= 1 \(got "0"\)/ },
    { script: 'faults/run.ts', args: ['--faults', 'nope'], says: /^error: --faults: unknown fault "nope"; known: kill-primary/ },
    { script: 'faults/run.ts', args: ['--clients', '0'], says: /^error: --clients: must be a whole number >= 1 \(got "0"\)/ },
    { script: 'infra/index/cli.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'infra/index/cli.ts', args: ['--index', 'Bad Name'], says: /^error: --index: must be an index name/ },
    { script: 'infra/index/cli.ts', args: [], env: { LOCK_INDEX: 'Bad' }, says: /^error: LOCK_INDEX: must be an index name/ },
    { script: 'infra/index/cli.ts', args: [], env: { ES_URL: 'foo' }, says: /^error: ES_URL: must be an http\(s\) URL such as http:\/\/127\.0\.0\.1:9200/ },
    { script: 'infra/index/cli.ts', args: ['--epoch', '0'], says: /^error: --epoch: must be a whole number from 1 to 921 \(got "0"\)/ },
    { script: 'infra/index/cli.ts', args: ['--epoch', '3', '--first'], says: /^error: --first and --epoch: give one/ },
    { script: 'infra/index/cli.ts', args: ['--adopt', 'restored-locks', '--first'], says: /^error: --first: not with --adopt/ },
    { script: 'infra/index/cli.ts', args: ['--adopt', 'Restored'], says: /^error: --adopt: must be an index name/ },
    { script: 'infra/index/cli.ts', args: ['--adopt', 'locks'], says: /^error: --adopt: "locks" is the lock index's alias itself/ },
    { script: 'infra/index/cli.ts', args: ['--shards', '0'], says: /^error: --shards: must be a whole number from 1 to 1024 \(got "0"\)/ },
    { script: 'infra/index/cli.ts', args: ['--shards', '2.5'], says: /^error: --shards: must be a whole number from 1 to 1024 \(got "2.5"\)/ },
    { script: 'infra/index/cli.ts', args: ['--adopt', 'restored-locks', '--shards', '3'], says: /^error: --shards: not with --adopt/ },
    { script: 'infra/es/cluster-cli.ts', args: ['start', '--nodes', 'x'], says: /^error: --nodes: must be a whole number from 1 to 9 \(got "x"\)/ },
    { script: 'infra/es/cli.ts', args: ['restart'], says: /^error: restart: unknown command; expected start, stop or status/ },
    { script: 'infra/es/cli.ts', args: ['status', '--bogus'], says: /^error: --bogus: unknown flag/ },
    {
      script: 'infra/es/cli.ts',
      args: ['status'],
      env: { ES_LOCAL_PORT: 'abc' },
      says: /^error: ES_LOCAL_PORT: must be a whole number from 1 to 65535 \(got "abc"\)/,
    },
    { script: 'infra/es/cluster-cli.ts', args: ['status'], env: { ES_CLUSTER_PORT: '0' }, says: /^error: ES_CLUSTER_PORT: must be a whole number from 1 to/ },
    { script: 'scripts/cold-start.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'scripts/cold-start.ts', args: [], env: { ES_URL: 'ftp://x' }, says: /^error: ES_URL: must be an http\(s\) URL/ },
    { script: 'scripts/cold-start.ts', args: ['--runs', 'x'], says: /^error: --runs: must be a whole number >= 1 \(got "x"\)/ },
    { script: 'scripts/dev.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'scripts/dev.ts', args: [], env: { PORT: 'abc' }, says: /^error: PORT: must be a whole number from 1 to 65535/ },
    { script: 'loadtests/runner/commands/k6-install.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'loadtests/runner/commands/loadtest-waiting.ts', args: ['--modes', 'spin'], says: /^error: --modes: unknown mode "spin" \(polling, queueing\)/ },
    { script: 'loadtests/runner/commands/loadtest-waiting.ts', args: ['--callers', '0'], says: /^error: --callers: must be a whole number/ },
    // --store: the same rule in every command that picks the lock store.
    ...[
      'infra/index/cli.ts',
      'loadtests/runner/commands/loadtest.ts',
      'bench/engine.ts',
      'scripts/dev.ts',
      'loadtests/runner/commands/loadtest-model.ts',
      'loadtests/runner/commands/loadtest-engine.ts',
      'loadtests/runner/commands/loadtest-waiting.ts',
    ].map((script) => ({
      script,
      args: ['--store', 'elastic'],
      says: /^error: --store: must be elasticsearch or opensearch \(got "elastic"\)/,
    })),
    { script: 'infra/index/cli.ts', args: [], env: { LOCK_STORE: 'os' }, says: /^error: LOCK_STORE: must be elasticsearch or opensearch \(got "os"\)/ },
    { script: 'loadtests/runner/commands/loadtest.ts', args: ['--store'], says: /^error: --store: needs a value/ },
    {
      script: 'infra/index/cli.ts',
      args: ['--store', 'opensearch'],
      env: { OPENSEARCH_URL: 'localhost:9250' },
      says: /^error: OPENSEARCH_URL: must be an http\(s\) URL such as http:\/\/127\.0\.0\.1:9250/,
    },
    {
      script: 'infra/index/cli.ts',
      args: [],
      env: { OPENSEARCH_URL: 'http://127.0.0.1:9250', OPENSEARCH_AUTH: 'sigv4' },
      says: /^error: OPENSEARCH_URL: must be https:\/\/ with OPENSEARCH_AUTH=sigv4/,
    },
  ];
  // All in one process (test/support/command-batch.ts): the same checks, without seventy Node starts.
  let outcomes: BatchOutcome[];
  beforeAll(async () => {
    outcomes = await commandBatch([...cases, ...HELP_CASES.map(([script]) => ({ script, args: ['--help'] }))]);
  });
  for (const [index, { script, args, env, says }] of cases.entries()) {
    it(`${script} ${args.join(' ')}${env ? ` (${Object.entries(env).map(([k, v]) => `${k}=${v}`)})` : ''}`, () => {
      const run = outcomes[index]!;
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
      expect(run.stderr.trimEnd()).toMatch(says);
      expect(run.stderr).toMatch(/see --help/);
      expect(run.stderr).not.toMatch(STACK_LINE);
    });
  }

  it('the batch sees what a command spawned alone does: the same code, the same line', async () => {
    for (const index of [0, cases.findIndex((entry) => entry.env !== undefined)]) {
      const { script, args, env } = cases[index]!;
      const alone = await commandAsync(script, args, env);
      expect({ code: alone.code, stderr: alone.stderr }).toEqual({ code: outcomes[index]!.code, stderr: outcomes[index]!.stderr });
    }
  });

  it('prints the stack with --verbose or DEBUG', () => {
    for (const run of [command('infra/index/cli.ts', ['--bogus', '--verbose']), command('infra/index/cli.ts', ['--bogus'], { DEBUG: '1' })]) {
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^error: --bogus: unknown flag/);
      expect(run.stderr).toMatch(STACK_LINE);
    }
  });

  it('--help prints the usage and exits 0', () => {
    for (const [offset, [script]] of HELP_CASES.entries()) {
      const run = outcomes[cases.length + offset]!;
      expect(run.code, `${script}: ${run.stderr}`).toBe(0);
      expect(run.stdout).toMatch(/^usage: /);
      expect(run.stdout).toMatch(/Exit codes/);
    }
  });
});

describe('an unreachable Elasticsearch: what was tried, what failed, what to do; exit 1', () => {
  it('index:create names the URL, the refusal and ES_URL', () => {
    const run = command('infra/index/cli.ts', [], { ES_URL: 'http://127.0.0.1:9999' });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/^error: cannot reach Elasticsearch at http:\/\/127\.0\.0\.1:9999$/m);
    expect(run.stderr).toMatch(/failed: connection refused \(ECONNREFUSED\)/);
    expect(run.stderr).toMatch(/to fix: check ES_URL \(now http:\/\/127\.0\.0\.1:9999\)/);
    expect(run.stderr).toMatch(/npm run es:start/);
    expect(run.stderr).not.toMatch(STACK_LINE);
    expect(run.stderr.split('\n').length).toBeLessThan(10);
  });

  it('with --verbose the causes and their stacks follow', () => {
    const run = command('infra/index/cli.ts', ['--verbose'], { ES_URL: 'http://127.0.0.1:9999' });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot reach Elasticsearch/);
    expect(run.stderr).toMatch(STACK_LINE);
    expect(run.stderr).toMatch(/ConnectionError/);
  });

  it('the load test says the same before k6 or the stack start, and writes no results', () => {
    const results = mkdtempSync(join(tmpdir(), 'cli-errors-'));
    try {
      const run = command('loadtests/runner/commands/loadtest.ts', ['--smoke', '--results', results], { ES_URL: 'http://127.0.0.1:9999' });
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toMatch(/^error: cannot reach Elasticsearch at http:\/\/127\.0\.0\.1:9999$/m);
      expect(run.stderr).toMatch(/failed: connection refused \(ECONNREFUSED\)/);
      expect(run.stderr).toMatch(/check ES_URL/);
      expect(run.stderr).not.toMatch(STACK_LINE);
      expect(run.stdout + run.stderr).not.toMatch(/k6 v|starting the stack/);
    } finally {
      rmSync(results, { recursive: true, force: true });
    }
  }, 120_000);

  it('on OpenSearch, the fix names OPENSEARCH_URL and the OpenSearch node (OPENSEARCH_URL alone picks the store)', () => {
    const run = command('infra/index/cli.ts', [], { OPENSEARCH_URL: 'http://127.0.0.1:9999' });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/^error: cannot reach OpenSearch at http:\/\/127\.0\.0\.1:9999$/m);
    expect(run.stderr).toMatch(/to fix: check OPENSEARCH_URL \(now http:\/\/127\.0\.0\.1:9999\)/);
    expect(run.stderr).toMatch(/--store opensearch .*npm run opensearch:start/);
    expect(run.stderr).not.toMatch(/ES_URL|es:start/);
  });

  it('cold-start says so before a minute of packaging', () => {
    const started = Date.now();
    const run = command('scripts/cold-start.ts', ['--runs', '1'], { ES_URL: 'http://127.0.0.1:9999' });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/^error: cannot reach Elasticsearch at http:\/\/127\.0\.0\.1:9999$/m);
    expect(run.stdout).not.toMatch(/packaging/);
    expect(run.stderr).not.toMatch(STACK_LINE);
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});

describe('index:create on the real node: the epoch of a new incarnation', () => {
  const alias = `locks-test-cli-${randomBytes(4).toString('hex')}`;
  const env = (): Record<string, string> => ({ ES_URL: inject('esUrl'), ...(inject('esApiKey') ? { ES_API_KEY: inject('esApiKey') } : {}) });
  afterAll(async () => {
    const client = createElasticsearchClient({ url: inject('esUrl').split(','), ...(inject('esApiKey') ? { apiKey: inject('esApiKey') } : {}) });
    await deleteLockIndex(client, alias);
    await client.close();
  });

  it('refuses a lock index that nothing records, saying --first or --epoch N (exit 2), and makes it with --first', async () => {
    const refused = await commandAsync('infra/index/cli.ts', ['--index', alias], env());
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/^error: --first or --epoch N: nothing records an earlier incarnation of lock index/);
    expect(refused.stderr).toMatch(/run again with --first/);
    expect(refused.stderr).not.toMatch(STACK_LINE);
    const made = await commandAsync('infra/index/cli.ts', ['--index', alias, '--first'], env());
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(new RegExp(`incarnation ${alias}-e001-\\d{8}-[0-9a-f]{8}, epoch 1\\).*: created`));
    const again = await commandAsync('infra/index/cli.ts', ['--index', alias, '--epoch', '1'], env());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/: exists\n {2}it existed already: --epoch was not used/);
  });

  it('--shards N makes a new incarnation with N primary shards; an existing one keeps its count', async () => {
    const sharded = `${alias}-sharded`;
    try {
      const made = await commandAsync('infra/index/cli.ts', ['--index', sharded, '--first', '--shards', '3'], env());
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toMatch(/: created\n {2}3 primary shards: each namespace lives on one/);
      const again = await commandAsync('infra/index/cli.ts', ['--index', sharded, '--shards', '2'], env());
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/: exists\n {2}3 primary shards.*\n {2}it existed already with 3 shards: --shards 2 was not used/);
    } finally {
      const client = createElasticsearchClient({ url: inject('esUrl').split(','), ...(inject('esApiKey') ? { apiKey: inject('esApiKey') } : {}) });
      await deleteLockIndex(client, sharded);
      await client.close();
    }
  });
});

describe('index:create --store opensearch on a real OpenSearch', () => {
  const alias = `locks-test-cli-os-${randomBytes(4).toString('hex')}`;
  // OPENSEARCH_URL when set, else the project's node (started here if it was not running, and then stopped here).
  let opensearch: EsTarget;
  beforeAll(async () => {
    opensearch = await resolveOpenSearch((line) => console.log(`[opensearch] ${line}`));
  });
  afterAll(async () => {
    const client = storeAt('opensearch', opensearch.url).client();
    await deleteLockIndex(client, alias).catch(() => {});
    await client.close();
    await opensearch?.stop();
  });

  it('creates the lock index there, names the server, and GET / names OpenSearch and its version', async () => {
    const made = await commandAsync('infra/index/cli.ts', ['--store', 'opensearch', '--index', alias, '--first'], { OPENSEARCH_URL: opensearch.url });
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(new RegExp(`lock index ${alias} \\(incarnation ${alias}-e001-\\d{8}-[0-9a-f]{8}, epoch 1\\) at OpenSearch .*: created`));
    const client = storeAt('opensearch', opensearch.url).client();
    try {
      expect(await client.indices.existsAlias({ name: alias })).toBe(true);
      expect(await describeServer(client)).toEqual({ product: 'OpenSearch', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    } finally {
      await client.close();
    }
  });
});

describe('which store a command picks', () => {
  it('--store, else LOCK_STORE, else opensearch when only OPENSEARCH_URL is set, else elasticsearch', () => {
    expect(chooseStore(undefined, {})).toBe('elasticsearch');
    expect(chooseStore(undefined, { OPENSEARCH_URL: 'http://os:9200' })).toBe('opensearch');
    expect(chooseStore(undefined, { OPENSEARCH_URL: 'http://os:9200', ES_URL: 'http://es:9200' })).toBe('elasticsearch');
    expect(chooseStore(undefined, { LOCK_STORE: 'opensearch' })).toBe('opensearch');
    expect(chooseStore('elasticsearch', { LOCK_STORE: 'opensearch', OPENSEARCH_URL: 'http://os:9200' })).toBe('elasticsearch');
    expect(() => chooseStore('OpenSearch', {})).toThrow(UsageError);
  });

  it('what the functions get: LOCK_STORE and the server, signed for an Amazon OpenSearch Service domain', () => {
    expect(storeAt('elasticsearch', 'http://es:9200', { ES_API_KEY: 'k' }).functionEnv()).toEqual({
      LOCK_STORE: 'elasticsearch',
      ES_URL: 'http://es:9200',
      ES_API_KEY: 'k',
    });
    expect(storeAt('opensearch', 'http://127.0.0.1:9250').functionEnv()).toEqual({
      LOCK_STORE: 'opensearch',
      OPENSEARCH_URL: 'http://127.0.0.1:9250',
      OPENSEARCH_AUTH: 'none',
      ES_API_KEY: '',
    });
    const domain = storeAt('opensearch', 'https://vpc-locks-abc.eu-west-1.es.amazonaws.com');
    expect(domain.connection()).toMatchObject({ product: 'opensearch', sigv4: { region: 'eu-west-1', service: 'es' } });
    expect(domain.functionEnv()).toMatchObject({ OPENSEARCH_AUTH: 'sigv4', OPENSEARCH_REGION: 'eu-west-1' });
  });

  it("the server's product and version, also where GET / has no handler (Elastic's test build)", async () => {
    const client = createElasticsearchClient({ url: inject('esUrl').split(','), ...(inject('esApiKey') ? { apiKey: inject('esApiKey') } : {}) });
    try {
      expect(await describeServer(client)).toEqual({ product: 'Elasticsearch', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    } finally {
      await client.close();
    }
  });
});

describe('a refusing or wrong Elasticsearch, spawned against fake servers', () => {
  const servers: Server[] = [];
  afterAll(() => closeAll(servers));
  const serve = async (answer: Parameters<typeof fakeServer>[0]): Promise<string> => {
    const { url, server } = await fakeServer(answer);
    servers.push(server);
    return url;
  };

  it('401: refused, the request, and ES_API_KEY to check', async () => {
    const url = await serve(securityAnswer(401));
    const run = await commandAsync('infra/index/cli.ts', [], { ES_URL: url, ES_API_KEY: 'bogus' });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^error: refused by Elasticsearch at ${url}$`, 'm'));
    expect(run.stderr).toMatch(/tried: {2}HEAD \/_alias\/locks \(to create lock index\)/);
    expect(run.stderr).toMatch(/failed: 401 Unauthorized/);
    expect(run.stderr).toMatch(/to fix: check ES_API_KEY/);
    expect(run.stderr).not.toMatch(STACK_LINE);
  });

  it('401 without a key: set ES_API_KEY; the load test stops before k6', async () => {
    const url = await serve(securityAnswer(401));
    const run = await commandAsync('loadtests/runner/commands/loadtest.ts', ['--smoke'], { ES_URL: url });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/failed: 401 Unauthorized/);
    expect(run.stderr).toMatch(/to fix: set ES_API_KEY/);
    expect(run.stdout + run.stderr).not.toMatch(/k6 v/);
  });

  it('403: the privileges of the key', async () => {
    const url = await serve(securityAnswer(403));
    const run = await commandAsync('infra/index/cli.ts', [], { ES_URL: url, ES_API_KEY: 'weak' });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/failed: 403 Forbidden/);
    expect(run.stderr).toMatch(/ES_API_KEY's privileges/);
  });

  it('a server that is not Elasticsearch, and https to a plain-http server', async () => {
    const url = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end('hello');
    });
    const plain = await commandAsync('infra/index/cli.ts', [], { ES_URL: url });
    expect(plain.code, plain.stderr).toBe(1);
    expect(plain.stderr).toMatch(new RegExp(`^error: the server at ${url} is not Elasticsearch$`, 'm'));
    const tls = await commandAsync('infra/index/cli.ts', [], { ES_URL: url.replace('http:', 'https:') });
    expect(tls.code, tls.stderr).toBe(1);
    expect(tls.stderr).toMatch(/^error: no secure connection to Elasticsearch at https:/m);
    expect(tls.stderr).toMatch(/does not speak https/);
    expect(tls.stderr).toMatch(/http:\/\/ for a node without TLS/);
    expect(tls.stderr.split('\n').length).toBeLessThan(8);
  });

  it('npm run dev names PORT when its port is taken', async () => {
    const url = await serve((_request, response) => response.end('taken'));
    const port = new URL(url).port;
    const run = await commandAsync('scripts/dev.ts', ['--quiet'], { PORT: port });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^error: port ${port} is already in use \\(something listens there\\): set PORT to a free port`, 'm'));
    expect(run.stderr).not.toMatch(STACK_LINE);
  });
});

describe('the shared pieces', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((request, response) => {
      const status = request.url?.includes('forbidden') ? 403 : 401;
      response.writeHead(status, { 'content-type': 'application/json', 'x-elastic-product': 'Elasticsearch' });
      response.end(JSON.stringify({ error: { type: 'security_exception', reason: 'nope' }, status }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('a 401 from Elasticsearch points at ES_API_KEY', async () => {
    const client = createElasticsearchClient({ url, apiKey: 'wrong' });
    const error = await client.indices.exists({ index: 'locks' }).catch((caught: unknown) => caught);
    await client.close();
    const explained = explainServiceError(error);
    expect(explained).toBeInstanceOf(ServiceError);
    expect(explained!.message).toMatch(new RegExp(`^refused by Elasticsearch at ${url}`));
    expect(explained!.message).toMatch(/401/);
    expect(explained!.message).toMatch(/ES_API_KEY/);
  });

  it('a 403 names the privileges', async () => {
    const client = createElasticsearchClient({ url, apiKey: 'weak' });
    const error = await client.indices.create({ index: 'forbidden' }).catch((caught: unknown) => caught);
    await client.close();
    expect(explainServiceError(error)?.message).toMatch(/403[\s\S]*privileges/);
  });

  it('a refused fetch names the address', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await fetch(`http://127.0.0.1:${port}/health`).catch((caught: unknown) => caught);
    const explained = explainServiceError(error);
    expect(explained?.message).toMatch(new RegExp(`^cannot reach the service at http://127\\.0\\.0\\.1:${port}\n`));
    expect(explained?.message).toMatch(/ECONNREFUSED/);
  });

  it('other errors: the message, a hint about --verbose, exit 1', () => {
    const { text, code } = describeFailure(new Error('disk full'), false);
    expect(code).toBe(1);
    expect(text).toBe('error: disk full\n(run again with --verbose, or DEBUG=1, for the stack trace)');
    expect(describeFailure(new UsageError('--x: bad'), false)).toEqual({ text: 'error: --x: bad (see --help)', code: 2 });
  });

  it('parseFlags and numberFlag', () => {
    expect(() => parseFlags(['--nope'], {})).toThrow(/^--nope: unknown flag$/);
    expect(parseFlags(['--n', '-3'], { n: { type: 'string' } }).values.n).toBe('-3');
    expect(() => numberFlag('--n', '-3', { integer: true, min: 1 }, 1)).toThrow(/^--n: must be a whole number >= 1 \(got "-3"\)$/);
    expect(numberFlag('--n', undefined, { integer: true, min: 1 }, 7)).toBe(7);
    expect(() => numberFlag('--n', '', { min: 0 }, 1)).toThrow(UsageError);
  });

  it('a timeout names the wait', async () => {
    const { url, server } = await fakeServer(() => {});
    const client = createElasticsearchClient({ url, requestTimeoutMs: 200 });
    const error = await client.indices.exists({ index: 'locks' }).catch((caught: unknown) => caught);
    await client.close();
    server.closeAllConnections();
    await closeAll([server]);
    expect(explainServiceError(error)?.message).toMatch(new RegExp(`^no answer from Elasticsearch at ${url}\n[\\s\\S]*no answer in time`));
  });

  it('networkProblem, childFailed and briefly', async () => {
    const { url, server } = await fakeServer(() => {});
    await closeAll([server]);
    const refused = await fetch(url).catch((caught: unknown) => caught);
    expect(networkProblem(refused)).toBe('connection refused (ECONNREFUSED)');
    expect(networkProblem(new Error('disk full'))).toBeUndefined();

    const child = await promisify(execFile)(process.execPath, ['-e', 'console.log("x".repeat(5000)); throw new TypeError("no handler")']).catch(
      (caught: unknown) => caught,
    );
    const failed = childFailed('the probe', child);
    expect(failed.message).toBe('the probe failed (exit 1): TypeError: no handler');
    expect(failed.cause).toBe(child);

    const long = Array.from({ length: 40 }, (_, i) => `line ${i} ${'y'.repeat(400)}`).join('\n');
    const short = briefly(long);
    expect(short.split('\n')).toHaveLength(13);
    expect(short).toMatch(/\.\.\. \(28 more lines\)$/);
    expect(Math.max(...short.split('\n').map((line) => line.length))).toBeLessThanOrEqual(304);
    expect(describeFailure(new Error(long), false).text.split('\n')).toHaveLength(14);
  });
});
