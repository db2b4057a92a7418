/**
 * What a person sees when a command is called wrongly or a service does not answer: the real commands,
 * spawned. A usage mistake is one line naming the flag and the rule, exit 2; an unreachable
 * Elasticsearch says where it was tried, what failed and what to do, exit 1; stack traces only with --verbose.
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createElasticsearchClient } from '../../functions/store/index.js';
import { describeFailure, explainServiceError, numberFlag, parseFlags, ServiceError, UsageError } from '../../infra/lib/cli.js';
import { ROOT } from '../loadtest/run.js';

const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');

/** The environment of a new user: no ES_URL, no DEBUG (unless given). */
function command(script: string, args: string[], env: Record<string, string> = {}): { code: number | null; stderr: string; stdout: string } {
  const base = { ...process.env };
  for (const name of ['ES_URL', 'ES_API_KEY', 'DEBUG', 'PORT', 'LAMBDA_PORT', 'BENCH_ROUNDS']) delete base[name];
  const result = spawnSync(process.execPath, [TSX, script, ...args], { cwd: ROOT, env: { ...base, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stderr: result.stderr, stdout: result.stdout };
}

const STACK_LINE = /^\s+at /m;

describe('usage mistakes: one line naming the flag and the rule, exit 2', () => {
  const cases: Array<{ script: string; args: string[]; env?: Record<string, string>; says: RegExp }> = [
    { script: 'scripts/loadtest.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag \(see --help\)$/ },
    { script: 'scripts/loadtest.ts', args: ['--rate', '-5'], says: /^error: --rate: must be a number > 0 \(got "-5"\)/ },
    { script: 'scripts/loadtest.ts', args: ['--rate', 'abc'], says: /^error: --rate: must be a number > 0 \(got "abc"\)/ },
    { script: 'scripts/loadtest.ts', args: ['--duration', '1.5'], says: /^error: --duration: must be a whole number >= 1 \(got "1.5"\)/ },
    { script: 'scripts/loadtest.ts', args: ['--smoke', 'now'], says: /^error: now: unexpected argument/ },
    { script: 'scripts/loadtest.ts', args: ['--rate'], says: /^error: --rate: needs a value/ },
    { script: 'bench/engine.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'bench/engine.ts', args: [], env: { BENCH_ROUNDS: '0' }, says: /^error: BENCH_ROUNDS: must be a whole number >= 1 \(got "0"\)/ },
    { script: 'faults/run.ts', args: ['--faults', 'nope'], says: /^error: --faults: unknown fault "nope"; known: kill-primary/ },
    { script: 'faults/run.ts', args: ['--clients', '0'], says: /^error: --clients: must be a whole number >= 1 \(got "0"\)/ },
    { script: 'infra/index/cli.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'infra/index/cli.ts', args: ['--index', 'Bad Name'], says: /^error: --index: must be an index name/ },
    { script: 'infra/es/cluster-cli.ts', args: ['start', '--nodes', 'x'], says: /^error: --nodes: must be a whole number from 1 to 9 \(got "x"\)/ },
    { script: 'infra/es/cli.ts', args: ['restart'], says: /^error: restart: unknown command; expected start, stop or status/ },
    { script: 'infra/es/cli.ts', args: ['status', '--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'scripts/cold-start.ts', args: ['--runs', 'x'], says: /^error: --runs: must be a whole number >= 1 \(got "x"\)/ },
    { script: 'scripts/dev.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
    { script: 'scripts/dev.ts', args: [], env: { PORT: 'abc' }, says: /^error: PORT: must be a whole number from 1 to 65535/ },
    { script: 'scripts/k6.ts', args: ['--bogus'], says: /^error: --bogus: unknown flag/ },
  ];
  for (const { script, args, env, says } of cases) {
    it(`${script} ${args.join(' ')}${env ? ` (${Object.entries(env).map(([k, v]) => `${k}=${v}`)})` : ''}`, () => {
      const run = command(script, args, env);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
      expect(run.stderr.trimEnd()).toMatch(says);
      expect(run.stderr).toMatch(/see --help/);
      expect(run.stderr).not.toMatch(STACK_LINE);
    });
  }

  it('prints the stack with --verbose or DEBUG', () => {
    for (const run of [command('infra/index/cli.ts', ['--bogus', '--verbose']), command('infra/index/cli.ts', ['--bogus'], { DEBUG: '1' })]) {
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^error: --bogus: unknown flag/);
      expect(run.stderr).toMatch(STACK_LINE);
    }
  });

  it('--help prints the usage and exits 0', () => {
    for (const [script, args] of [
      ['scripts/loadtest.ts', []],
      ['infra/index/cli.ts', []],
      ['infra/es/cli.ts', []],
      ['infra/es/cluster-cli.ts', []],
      ['faults/run.ts', []],
      ['bench/engine.ts', []],
      ['scripts/cold-start.ts', []],
      ['scripts/dev.ts', []],
      ['scripts/k6.ts', []],
    ] as const) {
      const run = command(script, [...args, '--help']);
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

  it('the load test says the same before any k6 run', () => {
    const run = command('scripts/loadtest.ts', ['--smoke', '--results', join(ROOT, 'results', 'test-cli-errors')], { ES_URL: 'http://127.0.0.1:9999' });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/^error: cannot reach Elasticsearch at http:\/\/127\.0\.0\.1:9999$/m);
    expect(run.stderr).toMatch(/check ES_URL/);
    expect(run.stderr).not.toMatch(STACK_LINE);
  }, 120_000);
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
});
