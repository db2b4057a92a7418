/**
 * npx tsx loadtests/runner/commands/signing-overhead.ts [--seconds S] [--vus N] [--rounds R]
 *
 * What the signing proxy (signing-proxy.ts) costs: the local stack is started, and k6 runs closed
 * loops of acquire + release (distinct ids, no contention) straight at serverless-offline and
 * through the proxy, alternated for R rounds, with fake static credentials (the local stack checks
 * no signature). Prints requests/s and request latency per way, the ratio, and the proxy's CPU per
 * request, the figure least moved by other load on the machine.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../../infra/lib/free-port.js';
import { startStack } from '../../../scripts/stack.js';
import { numberFlag, parseFlags, printHelp } from '../../../tools/cli/flags.js';
import { runCli } from '../../../tools/cli/run-cli.js';
import { ensureK6 } from '../k6-binary.js';
import { log } from '../log.js';
import { startSigningProxy } from '../signing-proxy.js';

const USAGE = `usage: npx tsx loadtests/runner/commands/signing-overhead.ts [--seconds S] [--vus N] [--rounds R]

What the kit's signing proxy costs: starts the local stack and runs k6 closed loops of acquire +
release straight at serverless-offline and through the proxy (fake credentials), alternated; prints
requests/s, latency, the ratio and the proxy's CPU per request.
  --seconds S    length of each measured run (default 10)
  --vus N        k6 virtual users, each one loop (default 20)
  --rounds R     direct and signed runs, alternated (default 3)
  --verbose      stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed (e.g. k6 or the stack), 2 a usage mistake.`;

const SCRIPT = `
import http from 'k6/http';
import exec from 'k6/execution';
export const options = { vus: Number(__ENV.VUS), duration: __ENV.SECONDS + 's' };
const params = { headers: { 'Content-Type': 'application/json' } };
export default function () {
  const id = 'vu' + exec.vu.idInTest + '-' + exec.scenario.iterationInTest;
  const acquired = http.post(__ENV.BASE_URL + '/acquire', JSON.stringify({ namespace: 'lt-overhead', granularity: 'document', ids: [id], owner: 'overhead', ttlMs: 5000 }), params);
  if (acquired.status === 200) http.post(__ENV.BASE_URL + '/release', JSON.stringify({ leaseToken: acquired.json('leaseToken') }), params);
}
`;

interface Figures {
  requestsPerS: number;
  requests: number;
  p50Ms: number;
  p95Ms: number;
  failed: number;
}

async function measure(k6: string, script: string, baseUrl: string, vus: number, seconds: number, dir: string, label: string): Promise<Figures> {
  const summary = join(dir, `summary-${label}.json`);
  const args = [
    'run',
    '--quiet',
    '--no-usage-report',
    `--summary-export=${summary}`,
    '-e',
    `BASE_URL=${baseUrl}`,
    '-e',
    `VUS=${vus}`,
    '-e',
    `SECONDS=${seconds}`,
    script,
  ];
  const code = await new Promise<number | null>((resolve) => spawn(k6, args, { stdio: 'ignore' }).once('exit', resolve));
  if (code !== 0) throw new Error(`k6 exited ${code} measuring ${label}`);
  const metrics = (JSON.parse(readFileSync(summary, 'utf8')) as { metrics: Record<string, Record<string, number>> }).metrics;
  return {
    requestsPerS: metrics.http_reqs?.rate ?? 0,
    requests: metrics.http_reqs?.count ?? 0,
    p50Ms: metrics.http_req_duration?.med ?? 0,
    p95Ms: metrics.http_req_duration?.['p(95)'] ?? 0,
    failed: metrics.http_req_failed?.value ?? 0,
  };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { seconds: { type: 'string' }, vus: { type: 'string' }, rounds: { type: 'string' } });
  if (printHelp(values, USAGE)) return 0;
  const positiveInteger = { integer: true, min: 1 };
  const seconds = numberFlag('--seconds', values.seconds as string | undefined, { min: 0, exclusiveMin: true }, 10);
  const vus = numberFlag('--vus', values.vus as string | undefined, positiveInteger, 20);
  const rounds = numberFlag('--rounds', values.rounds as string | undefined, positiveInteger, 3);
  const k6 = await ensureK6(log);
  const dir = mkdtempSync(join(tmpdir(), 'lt-overhead-'));
  const script = join(dir, 'cycle.js');
  writeFileSync(script, SCRIPT);
  const stack = await startStack({ inProcess: true, port: await freePort(), lambdaPort: await freePort() });
  // Fake static credentials: the local stack checks none, and the user's own are never used here.
  const proxy = await startSigningProxy(stack.baseUrl, {
    region: 'eu-central-1',
    credentials: async () => ({ accessKeyId: 'AKIDOVERHEAD', secretAccessKey: 'overhead' }),
  });
  const ways = { direct: stack.baseUrl.replace(/\/+$/, ''), signed: proxy.url };
  const seen: Record<keyof typeof ways, Figures[]> = { direct: [], signed: [] };
  // This process runs the proxy and reads the stack's output (serverless-offline and k6 are child
  // processes): its CPU per request in signed rounds, less that in direct rounds, is the proxy's.
  const cpuPerRequestUs: Record<keyof typeof ways, number[]> = { direct: [], signed: [] };
  try {
    await measure(k6, script, ways.direct, vus, 3, dir, 'warm-up');
    for (let round = 1; round <= rounds; round++) {
      for (const way of ['direct', 'signed'] as const) {
        const cpu = process.cpuUsage();
        const figures = await measure(k6, script, ways[way], vus, seconds, dir, `${way}-${round}`);
        const used = process.cpuUsage(cpu);
        cpuPerRequestUs[way].push((used.user + used.system) / Math.max(1, figures.requests));
        seen[way].push(figures);
        log(
          `round ${round} ${way}: ${figures.requestsPerS.toFixed(0)} requests/s, p50 ${figures.p50Ms.toFixed(1)} ms, p95 ${figures.p95Ms.toFixed(1)} ms, failed ${(figures.failed * 100).toFixed(2)}%`,
        );
      }
    }
  } finally {
    await proxy.close();
    await stack.stop();
  }
  const direct = median(seen.direct.map((f) => f.requestsPerS));
  const signed = median(seen.signed.map((f) => f.requestsPerS));
  const p50 = (way: keyof typeof ways) => median(seen[way].map((f) => f.p50Ms));
  log(
    `median of ${rounds} rounds, ${vus} VUs x ${seconds} s: direct ${direct.toFixed(0)} requests/s (p50 ${p50('direct').toFixed(1)} ms), ` +
      `signed through the proxy ${signed.toFixed(0)} requests/s (p50 ${p50('signed').toFixed(1)} ms): ${((signed / direct) * 100).toFixed(0)}% of direct; ` +
      `the proxy used ${(median(cpuPerRequestUs.signed) - median(cpuPerRequestUs.direct)).toFixed(0)} µs of CPU per request`,
  );
  return 0;
}

runCli(main);
