/**
 * The whole service on this machine: Elasticsearch (ES_URL, or the project's own node), the lock
 * index, and the functions behind serverless-offline (HTTP API on `port`, the Lambda invoke API on
 * `lambdaPort`). Used by `npm run dev`, the end-to-end tests and the load-test kit.
 *
 *   const stack = await startStack({ port: 3000 });
 *   await fetch(`${stack.baseUrl}/health`);
 *   await stack.stop();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { portAnswers } from '../infra/es/local.js';
import { resolveElasticsearch } from '../infra/es/target.js';
import { createElasticsearchClient, ensureLockIndex } from '../functions/store/index.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OSLS_BIN = join(ROOT, 'node_modules', 'osls', 'bin', 'serverless.js');

export interface StackOptions {
  /** HTTP API port (default 3000). */
  port?: number;
  /** Lambda invoke API port (default 3002). */
  lambdaPort?: number;
  /** Receives every line serverless-offline prints (function logs included). Default: kept quiet. */
  log?: (line: string) => void;
  /** Extra environment for the functions (LOCK_INDEX, POWERTOOLS_LOG_LEVEL, LOCK_TOKEN_SIGNING_KEY, ...). */
  env?: Record<string, string>;
  /** How long to wait for GET /health to answer 200 (default 180 s: the first run bundles the functions). */
  readyTimeoutMs?: number;
  /** Rebuild the bundles when source files change (for `npm run dev`; off by default so measurements never hit a rebuild). */
  watch?: boolean;
  /**
   * Run the handlers inside the serverless-offline process instead of one worker per concurrent
   * request. Load tests use it: starting a worker costs seconds of CPU on a 2-core machine, which
   * would measure the harness instead of the locks. The handlers keep no per-request module state.
   */
  inProcess?: boolean;
}

export interface Stack {
  baseUrl: string;
  esUrl: string;
  stop(): Promise<void>;
}

export interface StackDetails extends Stack {
  /** The local Lambda invoke endpoint (AWS SDK `endpoint`, or POST /2015-03-31/functions/<name>/invocations). */
  lambdaUrl: string;
  /** Function names as the invoke endpoint knows them: `es-lease-locks-local-<function>`. */
  functionName(name: string): string;
  lockIndex: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

export async function startStack(options: StackOptions = {}): Promise<StackDetails> {
  const port = options.port ?? 3000;
  const lambdaPort = options.lambdaPort ?? 3002;
  const log = options.log;
  const tail: string[] = [];
  const remember = (line: string) => {
    tail.push(line);
    if (tail.length > 80) tail.shift();
    log?.(line);
  };

  for (const taken of [port, lambdaPort]) {
    if (await portAnswers(taken)) throw new Error(`Port ${taken} is already in use; pass another port (options.port / options.lambdaPort) or stop what listens there.`);
  }

  // An explicit ES_URL in options.env wins; otherwise ES_URL from the environment, else the project's own node.
  const es = options.env?.ES_URL
    ? { url: options.env.ES_URL, ...(options.env.ES_API_KEY ? { apiKey: options.env.ES_API_KEY } : {}), stop: async () => {} }
    : await resolveElasticsearch(log ? (line) => log(`[es] ${line}`) : undefined);
  const env: Record<string, string> = {
    LOCK_INDEX: process.env.LOCK_INDEX ?? 'locks',
    LOCK_TOKEN_SIGNING_KEY: randomBytes(32).toString('base64'),
    POWERTOOLS_LOG_LEVEL: 'WARN',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_TRACE_ENABLED: 'false',
    ...options.env,
    ES_URL: options.env?.ES_URL ?? es.url,
    ...(es.apiKey && !options.env?.ES_API_KEY ? { ES_API_KEY: es.apiKey } : {}),
  };
  const lockIndex = env.LOCK_INDEX!;

  const stopEs = async () => {
    await es.stop();
  };
  try {
    const client = createElasticsearchClient({ url: env.ES_URL!, ...(env.ES_API_KEY ? { apiKey: env.ES_API_KEY } : {}), requestTimeoutMs: 30_000 });
    try {
      // On the project's own node a lock index left by an earlier version of this kit is replaced once idle.
      await ensureLockIndex(client, lockIndex, { replaceIdleLegacyIndex: !process.env.ES_URL && !options.env?.ES_URL });
    } finally {
      await client.close();
    }
  } catch (error) {
    await stopEs();
    throw error;
  }

  // Each stack bundles into its own folder, so that two stacks (tests, dev, a load test) never share one.
  const workFolder = `.esbuild/stack-${port}`;
  const offlineArgs = [
    'offline',
    'start',
    '--stage',
    'local',
    // Keep warm instances for the whole run: idle ones would otherwise be stopped after 60 s.
    '--terminateIdleLambdaTime',
    '3600',
    ...(options.inProcess ? ['--useInProcess'] : []),
  ];
  const child = spawn(process.execPath, [OSLS_BIN, ...offlineArgs], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ...env,
      OFFLINE_HTTP_PORT: String(port),
      OFFLINE_LAMBDA_PORT: String(lambdaPort),
      SLS_ESBUILD_WORK_FOLDER: workFolder,
      ...(options.watch ? {} : { SLS_ESBUILD_WATCH_PATTERN: '.no-watch/none' }),
      SLS_TELEMETRY_DISABLED: '1',
      SLS_NOTIFICATIONS_MODE: 'off',
      FORCE_COLOR: '0',
    },
  });
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
  });
  for (const stream of [child.stdout, child.stderr]) {
    let pending = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) remember(line.replace(/\r$/, ''));
    });
  }

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (!exited) {
      killGroup(child, 'SIGTERM');
      await Promise.race([exit, sleep(5_000)]);
      if (!exited) {
        killGroup(child, 'SIGKILL');
        await Promise.race([exit, sleep(2_000)]);
      }
    }
    rmSync(join(ROOT, workFolder), { recursive: true, force: true });
    await stopEs();
  };

  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 180_000);
  let lastProblem = 'no answer yet';
  while (true) {
    if (exited) {
      await stop();
      throw new Error(`serverless offline exited (code ${exited.code}, signal ${exited.signal}) before ${baseUrl}/health answered.\n${tail.join('\n')}`);
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${baseUrl}/health did not answer 200 in time (last: ${lastProblem}).\n${tail.join('\n')}`);
    }
    try {
      const response = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(5_000) });
      if (response.status === 200) break;
      lastProblem = `HTTP ${response.status} ${(await response.text()).slice(0, 200)}`;
    } catch (error) {
      lastProblem = (error as Error).message;
    }
    await sleep(250);
  }

  return {
    baseUrl,
    esUrl: env.ES_URL!,
    lambdaUrl: `http://127.0.0.1:${lambdaPort}`,
    functionName: (name) => `es-lease-locks-local-${name}`,
    lockIndex,
    stop,
  };
}
