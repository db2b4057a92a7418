/**
 * `npm run loadtest -- --smoke` end to end on the real stack (the test run's Elasticsearch, the lock
 * index, serverless-offline): a few seconds per granularity. The first run on a machine also builds k6.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { createElasticsearchClient } from '../../functions/store/index.js';
import { parseHoldLog } from '../../loadtests/runner/checker.js';
import { runLoadtest } from './run.js';

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port p with p and p + 1 free (HTTP API and Lambda invoke API of serverless-offline). */
async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if ((await portFree(port)) && (await portFree(port + 1))) return port;
  }
  throw new Error('no free port pair found');
}

describe('npm run loadtest -- --smoke', () => {
  it('starts the stack, runs the three granularities and writes the report', async () => {
    const results = mkdtempSync(join(tmpdir(), 'lt-smoke-'));
    const port = await freePortPair();
    const apiKey = inject('esApiKey');
    const run = await runLoadtest(['--smoke', '--port', String(port)], results, {
      ES_URL: inject('esUrl'),
      ...(apiKey ? { ES_API_KEY: apiKey } : {}),
    });
    expect(run.code, run.output.slice(-6000)).toBe(0);
    expect(run.resultDir).toBeDefined();
    const reportFile = join(run.resultDir!, 'report.md');
    expect(existsSync(reportFile)).toBe(true);
    const report = readFileSync(reportFile, 'utf8');
    // Which server and version the figures come from.
    expect(report).toMatch(/^- lock store: Elasticsearch \d+\.\d+\.\d+ at http/m);
    for (const granularity of ['global', 'document', 'tree']) {
      expect(report).toContain(`| ${granularity} |`);
      expect(run.output).toMatch(new RegExp(`safety ${granularity}/default: OK`));
    }
    expect(existsSync(join(run.resultDir!, 'goodput.svg'))).toBe(true);
    expect(run.output).toMatch(/recommendation/);
    // k6's own end-of-test summary (with the checks) in its log, not on the terminal (no --verbose):
    // there, one line of ours per run; and its web dashboard exported beside the report.
    expect(readFileSync(join(run.resultDir!, 'k6-default-tree.log'), 'utf8')).toMatch(/checks_succeeded\.*: 100\.00%/);
    expect(readdirSync(join(run.resultDir!, 'probes')).some((name) => /^k6-default-global-probe\d+\.log$/.test(name))).toBe(true);
    expect(run.output).not.toMatch(/checks_succeeded|have been crossed|█/);
    expect(run.output).toMatch(/\[tree\] steady \d+\/s for \d+s: goodput \d+ of \d+ offered/);
    const html = readFileSync(join(run.resultDir!, 'report.html'), 'utf8');
    for (const granularity of ['global', 'document', 'tree']) {
      const dashboard = `k6-dashboard-default-${granularity}.html`;
      expect(existsSync(join(run.resultDir!, dashboard)), dashboard).toBe(true);
      expect(html).toContain(`href="${dashboard}"`);
      // The run's one line: its figures, its safety and its dashboard together.
      expect(run.output).toMatch(
        new RegExp(`\\[${granularity}\\] steady \\d+/s for \\d+s: goodput .*; safety ${granularity}/default: OK.*; dashboard ${dashboard}`),
      );
    }
    // Every probe in a namespace of its own: holders an overloaded run cut off keep their leases, and
    // in a shared namespace they made the next probes of global measure nothing.
    const namespacesIn = (file: string) => new Set(parseHoldLog(readFileSync(file, 'utf8')).holds.map((hold) => hold.namespace));
    const probeDir = join(run.resultDir!, 'probes');
    const runs = [
      join(run.resultDir!, 'holds-default-global.log'),
      ...readdirSync(probeDir)
        .filter((name) => name.startsWith('holds-default-global-probe'))
        .map((name) => join(probeDir, name)),
    ];
    const namespaces = runs.map(namespacesIn).filter((set) => set.size > 0);
    expect(namespaces.length, 'the steady run and at least one probe held locks').toBeGreaterThanOrEqual(2);
    for (const set of namespaces) expect(set.size).toBe(1);
    expect(new Set(namespaces.flatMap((set) => [...set])).size).toBe(namespaces.length);
    // Self-contained, so it opens offline: nothing loaded from elsewhere, and the only URLs are XML namespaces.
    const dashboardHtml = readFileSync(join(run.resultDir!, 'k6-dashboard-default-tree.html'), 'utf8');
    expect(dashboardHtml).not.toMatch(/(src|href)=["']?(https?:)?\/\/|url\(["']?(https?:)?\/\/|@import/);
    expect(new Set(dashboardHtml.match(/https?:\/\/[^"'\s)]*/g)?.filter((url) => !url.startsWith('http://www.w3.org/')))).toEqual(new Set());
  }, 600_000);

  it('takes the tree from an Elasticsearch index and replays a trace, end to end', async () => {
    const results = mkdtempSync(join(tmpdir(), 'lt-user-'));
    const port = await freePortPair();
    const esUrl = inject('esUrl');
    const apiKey = inject('esApiKey');
    const client = createElasticsearchClient({ url: esUrl, ...(apiKey ? { apiKey } : {}) });
    const index = `lt-e2e-files-${process.pid}`;
    const paths = ['src', 'docs'].flatMap((top) => ['a', 'b'].flatMap((sub) => Array.from({ length: 8 }, (_, i) => `/proj/${top}/${sub}/f${i}.txt`)));
    await client.bulk({ refresh: true, operations: paths.flatMap((path) => [{ index: { _index: index } }, { path }]) });
    const trace = Array.from({ length: 40 }, (_, i) => {
      const op =
        i % 10 === 3
          ? { op: 'rename', target: '/proj/src/a' }
          : i % 10 === 7
            ? { op: 'create', target: `/proj/docs/b/new${i}.txt` }
            : { op: i % 2 ? 'edit' : 'read', target: paths[i % paths.length] };
      return JSON.stringify({ ...op, time: i * 0.05 });
    });
    const traceFile = join(mkdtempSync(join(tmpdir(), 'lt-trace-')), 'trace-in.jsonl');
    writeFileSync(traceFile, `${trace.join('\n')}\n`);
    try {
      const run = await runLoadtest(
        [
          '--smoke',
          '--port',
          String(port),
          '--strategies',
          'document,tree',
          '--from-index',
          index,
          '--path-field',
          'path',
          '--trace',
          traceFile,
          '--trace-speed',
          '2',
        ],
        results,
        { ES_URL: esUrl, ...(apiKey ? { ES_API_KEY: apiKey } : {}) },
      );
      expect(run.code, run.output.slice(-6000)).toBe(0);
      expect(readFileSync(join(run.resultDir!, 'paths.txt'), 'utf8').trim().split('\n').sort()).toEqual([...paths].sort());
      expect(readFileSync(join(run.resultDir!, 'trace.jsonl'), 'utf8').trim().split('\n')).toHaveLength(40);
      expect(run.output).toMatch(/replays 40 operations of .*trace-in\.jsonl at 2x their timing/);
      expect(run.output).toMatch(/\[document\] steady \d+\/s for 1s: goodput 40 of 40 offered/);
      for (const granularity of ['document', 'tree']) expect(run.output).toMatch(new RegExp(`safety ${granularity}/default: OK`));
      const report = readFileSync(join(run.resultDir!, 'report.md'), 'utf8');
      expect(report).toContain(`32 paths from ${esUrl.replace(/\/+$/, '')} ${index}.path`);
    } finally {
      await client.indices.delete({ index }, { ignore: [404] });
      await client.close();
    }
  }, 600_000);
});
