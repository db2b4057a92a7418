/**
 * The service under test: a deployed stage (--target), checked once, or the local stack (the lock
 * store of --store, lock index, serverless-offline) started here with the tree seeded next to it.
 * close() undoes whatever was started, also when the start failed half-way.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { givenStore, type StoreEndpoint, storeLogTag, storeUrlVariable } from '../../infra/lib/store-target.js';
import type { LoadtestConfig } from './config.js';
import { ConfigError } from './config-error.js';
import type { Interrupt } from './interrupt.js';
import { log, phase, warn } from './log.js';
import { dropSeedIndex, seedIndexName, seedTree } from './seed.js';
import { startSigningProxy } from './signing-proxy.js';
import { checkTargetAccess } from './target-check.js';
import { warmupNamespace } from './warmup.js';

export interface Service {
  /** Where the kit sends its requests: the service itself, or the signing proxy in front of a deployed stage. */
  baseUrl: string;
  /** What is tested, as the reports name it (the target, not the proxy). */
  shownUrl: string;
  /** The lock store the functions use, when known here (the local stack's, or ES_URL / OPENSEARCH_URL with --target): the engine-only layer runs on it. */
  store?: StoreEndpoint;
  /** What the report should say about the service (e.g. the seeded index). */
  notes: string[];
  close(): Promise<void>;
}

/** Called with the lock store once it answers, before the tree is seeded (e.g. to read the user's paths from an index). */
export type BeforeSeed = (store: StoreEndpoint) => Promise<string[]>;

export async function openService(
  config: LoadtestConfig,
  run: { runId: string; outDir: string; interrupt: Interrupt },
  beforeSeed?: BeforeSeed,
): Promise<Service> {
  if (!config.target) return startLocal(config, run, beforeSeed);
  const service = await openTarget(config, run.runId);
  if (beforeSeed) {
    try {
      if (!service.store) throw new ConfigError(`--from-index with --target: set ${storeUrlVariable(config.store)} to the cluster that holds the index`);
      service.notes.push(...(await beforeSeed(service.store)));
    } catch (error) {
      await service.close();
      throw error;
    }
  }
  return service;
}

/**
 * A deployed stage: requests go through the signing proxy (unless --no-sign), and the stage is
 * checked for reachability and the kit's permissions before anything runs.
 */
async function openTarget(config: LoadtestConfig, runId: string): Promise<Service> {
  const target = config.target!;
  const proxy = config.sign ? await startSigningProxy(target, config.region ? { region: config.region } : {}) : undefined;
  phase(
    `target ${target}: nothing is started locally${proxy ? `; requests signed (SigV4, execute-api, ${proxy.region}) through ${proxy.url}` : ', requests unsigned'}`,
  );
  const baseUrl = proxy?.url ?? target;
  const close = async (): Promise<void> => proxy?.close();
  try {
    // The warm-up's namespace: the first the kit locks in.
    await checkTargetAccess(baseUrl, target, warmupNamespace(runId));
  } catch (error) {
    await close();
    throw error;
  }
  log(`target answers /health and grants and releases a lock in ${warmupNamespace(runId)}`);
  const store = givenStore(config.store);
  return { baseUrl, shownUrl: target, ...(store ? { store } : {}), notes: [], close };
}

/** The stack's module is loaded only here, so --target runs without serverless-offline and the Elasticsearch client installed. */
async function loadStartStack(): Promise<typeof import('../../scripts/stack.js').startStack> {
  try {
    return (await import('../../scripts/stack.js')).startStack;
  } catch (error) {
    throw new Error(`the local stack cannot be started (${(error as Error).message}); use --target URL against a running service.`);
  }
}

async function startLocal(config: LoadtestConfig, run: { runId: string; outDir: string; interrupt: Interrupt }, beforeSeed?: BeforeSeed): Promise<Service> {
  phase(`starting the stack (${config.store}, lock index, serverless-offline)`);
  const startStack = await loadStartStack();
  const started = Date.now();
  mkdirSync(run.outDir, { recursive: true });
  const stackLog = join(run.outDir, 'stack.log');
  const logTag = `[${storeLogTag(config.store)}]`;
  const stack = await startStack({
    store: config.store,
    ...(config.port ? { port: config.port, lambdaPort: config.port + 1 } : {}),
    portNames: { port: '--port', lambdaPort: '--port (the Lambda invoke API takes the port after it)' },
    // One warm handler instance serving requests concurrently: the run measures the locks, not
    // serverless-offline starting a worker per concurrent request. LOADTEST_LAMBDA_WORKERS=1 restores that.
    inProcess: process.env.LOADTEST_LAMBDA_WORKERS !== '1',
    // Everything goes to stack.log; the terminal gets the lock store's lines.
    log: (line) => {
      appendFileSync(stackLog, `${line}\n`);
      if (line.startsWith(logTag)) log(`stack: ${line}`);
    },
  });
  const baseUrl = stack.baseUrl.replace(/\/+$/, '');
  log(`stack up in ${Math.round((Date.now() - started) / 1000)} s: ${baseUrl} (${stack.store.name} ${stack.store.url})`);
  // One client for the seeded index, its creation to its deletion (a large tree's bulk outlasts the default timeout).
  const seedClient = stack.store.client({ requestTimeoutMs: 30_000 });
  let seeded: string | undefined;
  const close = async (): Promise<void> => {
    if (seeded) await dropSeedIndex(seedClient, seeded).catch((error: unknown) => log(`could not delete ${seeded}: ${(error as Error).message}`));
    await seedClient.close();
    phase('stopping the stack');
    await stack.stop().catch((error: unknown) => warn(`stopping the stack failed: ${(error as Error).message}`));
  };
  const notes: string[] = [];
  try {
    if (beforeSeed) notes.push(...(await beforeSeed(stack.store)));
    if (config.seed && !run.interrupt.interrupted) {
      seeded = seedIndexName(run.runId);
      const documents = await seedTree(seedClient, seeded, config.workloads);
      log(`seeded ${documents} file documents into ${seeded}`);
      notes.push(`tree seeded into ${stack.store.name} index ${seeded} (${documents} documents), deleted after the run`);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { baseUrl, shownUrl: baseUrl, store: stack.store, notes, close };
}
