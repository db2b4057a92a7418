/**
 * `scripts/loadtest.ts --smoke` end to end on the real stack (the test run's Elasticsearch, the lock
 * index, serverless-offline): a few seconds per strategy. The first run on a machine also builds k6.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
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
  it('starts the stack, runs the three strategies and writes the report', async () => {
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
    for (const strategy of ['global', 'document', 'tree']) {
      expect(report).toContain(`| ${strategy} |`);
      expect(run.output).toMatch(new RegExp(`safety ${strategy}/default: OK`));
    }
    expect(existsSync(join(run.resultDir!, 'goodput.svg'))).toBe(true);
    expect(run.output).toMatch(/recommendation/);
  }, 600_000);
});
