/**
 * `npm run cold-start`: what a cold start costs. Packages the functions exactly as a deploy would
 * (`serverless package`, esbuild bundles; with the examples: examples=true), then prints per function the zip size and the bundle
 * size, and the init time: importing the bundle in a fresh Node process (median of N runs), plus,
 * when Elasticsearch answers (ES_URL or the project's own node), the first invocation of acquire
 * in that fresh process (client creation, index check, one lock round trip).
 *
 *   npm run cold-start -- [--runs 7] [--functions acquire,renew]
 */
import { type ExecFileOptions, execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { localNode } from '../infra/es/node.js';
import { isRunning } from '../infra/es/probe.js';
import { checkElasticsearch, esUrlFromEnv } from '../infra/es/target.js';
import { numberFlag, parseFlags, printHelp } from '../tools/cli/flags.js';
import { childFailed, runCli } from '../tools/cli/run-cli.js';
import { ROOT } from './lib/root.js';

const execFileAsync = promisify(execFile);
/** execFile whose failure reads as one line (what ran, its exit, the error line of its output). */
const run = (what: string, file: string, args: string[], options: ExecFileOptions = {}): Promise<{ stdout: string; stderr: string }> =>
  execFileAsync(file, args, { ...options, encoding: 'utf8' }).catch((error: unknown) => {
    throw childFailed(what, error);
  });

const USAGE = `usage: npm run cold-start -- [--runs N] [--functions LIST]

Packages the functions as a deploy would, then prints per function the zip and bundle sizes and the
import time in a fresh Node process (median of --runs), plus the first acquire when Elasticsearch
answers (ES_URL, or the project's own node if it runs).
  --runs N            fresh processes per function, a whole number >= 1 (default 7)
  --functions LIST    only these functions, e.g. acquire,renew
  --verbose           print stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed, 2 a usage mistake.`;

let runs = 7;
let only: string[] | undefined;
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const kb = (bytes: number): string => `${(bytes / 1024).toFixed(0)} KB`;

const IMPORT_PROBE = `
const started = performance.now();
const module = await import(process.env.BUNDLE);
const imported = performance.now() - started;
let firstCall = null;
if (process.env.CALL === '1') {
  const callStarted = performance.now();
  const grant = await module.handler({ namespace: 'cold-start', granularity: 'global', owner: 'cold-start', ttlMs: 1000 }, { awsRequestId: 'cold-start', functionName: 'cold-start' });
  firstCall = performance.now() - callStarted;
  const release = await import(process.env.RELEASE_BUNDLE);
  await release.handler({ leaseToken: grant.leaseToken }, { awsRequestId: 'cold-start-release', functionName: 'cold-start' });
}
console.log(JSON.stringify({ imported, firstCall }));
process.exit(0);
`;

async function main(argv: string[]): Promise<number | undefined> {
  const { values } = parseFlags(argv, { runs: { type: 'string' }, functions: { type: 'string' } });
  if (printHelp(values, USAGE)) return 0;
  runs = numberFlag('--runs', values.runs as string | undefined, { integer: true, min: 1 }, runs);
  only = (values.functions as string | undefined)?.split(',').map((name) => name.trim());
  // An ES_URL that does not answer (or refuses its key) fails now, not after a minute of packaging.
  const givenEs = esUrlFromEnv();
  if (givenEs) await checkElasticsearch(givenEs, process.env.ES_API_KEY);
  const work = mkdtempSync(join(tmpdir(), 'cold-start-'));
  const workFolder = `.esbuild/cold-start-${process.pid}`;
  try {
    console.log('packaging (serverless package --stage dev --param=examples=true)...');
    await run(
      'serverless package',
      process.execPath,
      [join(ROOT, 'node_modules/osls/bin/serverless.js'), 'package', '--stage', 'dev', '--param=examples=true', '--package', join(work, 'package')],
      {
        cwd: ROOT,
        env: { ...process.env, ES_URL: process.env.ES_URL || 'http://127.0.0.1:9200', SLS_ESBUILD_WORK_FOLDER: workFolder, SLS_TELEMETRY_DISABLED: '1' },
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    const esUrl = givenEs ?? ((await isRunning()) ? localNode().url : undefined);
    const zips = readdirSync(join(work, 'package'))
      .filter((file) => file.endsWith('.zip'))
      .map((file) => file.replace(/\.zip$/, ''))
      .filter((name) => !only || only.includes(name))
      .sort();
    for (const name of new Set([...zips, 'release'])) {
      await run(`unzip ${name}.zip`, 'unzip', ['-q', '-o', join(work, 'package', `${name}.zip`), '-d', join(work, name)]);
    }
    const rows: string[][] = [['function', 'zip', 'bundle (all .mjs)', 'main .mjs', `import, median of ${runs}`, 'min', 'first call (cold)']];
    for (const name of zips) {
      // The handler's folder and file: functions/handlers/<name>, but for the example SQS consumer in examples/.
      const [folder, entry] = name === 'sqsConsumer' ? ['examples/sqs-consumer', 'handler'] : ['functions/handlers', name];
      const dir = join(work, name, folder);
      const files = readdirSync(dir);
      const bundleBytes = files.reduce((sum, file) => sum + statSync(join(dir, file)).size, 0);
      const imports: number[] = [];
      const calls: number[] = [];
      for (let index = 0; index < runs; index++) {
        const call = esUrl !== undefined && name === 'acquire';
        const { stdout } = await run(`the cold-start probe of ${name} (a fresh node process)`, process.execPath, ['--input-type=module', '-e', IMPORT_PROBE], {
          cwd: work,
          env: {
            PATH: process.env.PATH,
            BUNDLE: join(dir, `${entry}.mjs`),
            RELEASE_BUNDLE: join(work, 'release', 'functions', 'handlers', 'release.mjs'),
            CALL: call ? '1' : '0',
            ES_URL: esUrl ?? 'http://127.0.0.1:9',
            ...(process.env.ES_API_KEY ? { ES_API_KEY: process.env.ES_API_KEY } : {}),
            LOCK_INDEX: 'locks-cold-start',
            LOCK_ENSURE_INDEX: 'true',
            // The bundles run outside any stage: no namespace policy would refuse the acquire.
            LOCK_POLICY: 'allow-all',
            POWERTOOLS_LOG_LEVEL: 'SILENT',
            POWERTOOLS_METRICS_DISABLED: 'true',
            POWERTOOLS_TRACE_ENABLED: 'false',
          },
        });
        const probe = JSON.parse(stdout.trim().split('\n').at(-1)!) as { imported: number; firstCall: number | null };
        imports.push(probe.imported);
        if (probe.firstCall !== null) calls.push(probe.firstCall);
      }
      rows.push([
        name,
        kb(statSync(join(work, 'package', `${name}.zip`)).size),
        kb(bundleBytes),
        kb(statSync(join(dir, `${entry}.mjs`)).size),
        `${median(imports).toFixed(0)} ms`,
        `${Math.min(...imports).toFixed(0)} ms`,
        calls.length > 0 ? `${median(calls).toFixed(0)} ms` : '-',
      ]);
    }
    const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
    for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
    console.log(
      `\nnode ${process.version} on ${process.platform}/${process.arch}; import = time to load the bundle in a fresh process (Lambda's init phase does this);` +
        (esUrl
          ? ` first call = the first acquire in that process against ${esUrl} (index check + grant), then released.`
          : ' no Elasticsearch answered, so no first-call figure.'),
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(join(ROOT, workFolder), { recursive: true, force: true });
  }
  return undefined;
}

runCli(main);
