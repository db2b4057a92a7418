/**
 * The engine driver: the lock layer measured alone. The kit's workload, operation for operation as
 * the k6 script (loadtests/k6/locks.ts) runs it, but through a LockEngine in this process (no HTTP, no
 * serverless-offline) on the same lock store (Elasticsearch or OpenSearch). Its probes are judged
 * by the same objective (capacity.ts `judge`), its critical sections by the same safety checker
 * (hold lines in the k6 format, read back with `parseHoldLog` and judged by `checkHolds`), and
 * `engineProbe` plugs into the same `searchCapacity`, so a report can set the capacity the locks
 * allow beside the capacity through the functions on the local HTTP stack.
 *
 * Decisions (each mirrors the HTTP layer unless said otherwise):
 *
 *   arrivals   open model like k6's constant-arrival-rate: round(rate × seconds) arrivals, arrival i
 *              due at start + i / rate, every due time computed from the start (performance.now), so
 *              a late timer delays one arrival and never the ones after it; when the event loop was
 *              late every arrival already due starts at once. Node's timers fire no earlier than asked,
 *              at about 1 ms granularity: above 1000 ops/s several arrivals share a tick, each started
 *              at or after its own due time, none skipped. How late arrivals started is reported
 *              (`schedule.lagP99Ms`): a large lag means this process, not the locks, was the limit.
 *   in flight  at most `maxInFlight` operations at once (k6's maxVUs; the kit's schedule.vus.max): an
 *              arrival that finds all of them busy is dropped and counted, as k6 counts
 *              dropped_iterations. Each slot is a "VU" with k6's owner name (`<runId>-<strategy>-vu<n>`).
 *   grace      arrivals that are still running `gracefulStopS` after the last arrival's second (2 s,
 *              as the kit's probes) count for nothing, like iterations k6 interrupts; unlike k6 they
 *              are still released (and their holds checked) before the probe returns.
 *   answers    an engine error is read as the client reads the HTTP answer: through the functions'
 *              own error mapping (functions/runtime/errors.ts `errorReply`), then as loadtests/k6/
 *              api.ts classifies the status: 409 or a 503 LockContentionError is a conflict (retried,
 *              gave-up at the budget), any other 503 is unavailable (retried, an error at the budget),
 *              anything else an error; the Retry-After hint comes from the body or the header alike.
 *   client     one search client for every operation, set like the functions' (request timeout
 *              3 s, no client retries, no compression), and a lock engine with a token-signing key as
 *              the local stack gives the functions (a signed token lets release delete without reading
 *              first). The local stack runs the handlers inside one serverless-offline process with
 *              one client per function (acquire's, release's), so one client for all operations is
 *              what the HTTP layer has, near enough; a warm Lambda fleet shares nothing (a client per
 *              container), which changes the connection count, not the lock index's work per
 *              operation that this layer measures. One probe at a time per target.
 *   isolation  every probe gets a namespace of its own (`lt-e-<strategy>-<runId>-p<n>`): leftovers of
 *              a probe cannot conflict with the next one. After a probe every operation has finished
 *              (and released); lock documents still held in its namespace are counted (`leftoverLocks`,
 *              normally 0) and every document of the namespace is deleted (the tree strategy's
 *              ancestor markers too), so nothing piles up in the index. The HTTP kit keeps one
 *              namespace per run, so its later probes find those markers already written; here each
 *              probe writes them again (measured: tree +0.1-0.2 writes per operation at 150 ops/s
 *              over 3 s, within the noise of p99).
 *              The lock index is this driver's own (created and deleted by `openEngineTarget`) unless
 *              an index is given.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { LockEngine } from '../../functions/core/engine.js';
import type { Grant } from '../../functions/core/model.js';
import { errorReply } from '../../functions/runtime/errors.js';
import { createLockEngine, createSearchClient, deleteLockIndex, ensureLockIndex } from '../../functions/store/index.js';
import type { SearchClient, SearchConnection } from '../../functions/store/search-client.js';
import { backoffDelayMs, retryDelayMs } from '../shared/backoff.js';
import { judge, type Objective, type ProbeVerdict } from '../shared/objective.js';
import { parsePathList, parseTrace, traceOperations, treeFromPaths, treeFromTrace } from '../shared/user-workload.js';
import {
  HOLD_MARKER,
  type HoldRecord,
  lockPlan,
  type Operation,
  operationSource,
  type RetryPolicy,
  type Strategy,
  type Tree,
  type WorkloadConfig,
} from '../shared/workload.js';
import { type Bracket, type CapacityResult, type SearchSettings, searchCapacity } from './capacity.js';
import { checkHolds, parseHoldLog, type SafetyReport } from './checker.js';
import type { LoadtestConfig } from './config.js';
import { noRequests, type PerKind, perKind, REQUEST_KINDS, type RequestKind } from './model.js';
import type { Latency, StageStats } from './summary.js';

/** What locks.ts does after the critical section: up to 6 release attempts, 100 ms doubling to 3.2 s between them. */
const RELEASE_ATTEMPTS = 6;
const RELEASE_BACKOFF = { baseMs: 100, maxMs: 3200 };
/** The functions' Elasticsearch request timeout (serverless.yml ES_REQUEST_TIMEOUT_MS). */
const FUNCTION_ES_TIMEOUT_MS = 3_000;
/** The kit's probes give in-flight iterations this long after the last second (strategy-run.ts runProbe). */
export const PROBE_GRACEFUL_STOP_S = 2;

// ---------------------------------------------------------------------------------------------
// The target: an engine over a lock index, with the requests it sends to the lock store counted.

/** One probe at a time per target: the request counts are the client's, whoever sent them. */
export interface EngineTarget {
  readonly engine: LockEngine;
  readonly client: SearchClient;
  /** The lock index (alias) the engine works on. */
  readonly index: string;
  /** Elasticsearch requests sent through the client so far, in all and by kind. */
  requests(): { total: number; byKind: PerKind };
  /** A new probe number (namespaces are unique per probe). */
  nextProbe(): number;
  /** Deletes the lock documents of `namespace`; answers how many still had a holder (should be 0 once every operation released). */
  sweepNamespace(namespace: string): Promise<number>;
  /** Drops the lock index when it was created here, and the client when it was made here. */
  close(): Promise<void>;
}

export interface EngineTargetOptions {
  /** A client to use (not closed on close); otherwise one is made for `connection`. */
  client?: SearchClient;
  /** Elasticsearch or OpenSearch, as the store reaches it (StoreEndpoint.connection()); default the local Elasticsearch. */
  connection?: SearchConnection;
  /** The kit's lock index, kept on close; default: an index of this driver's own, deleted on close. */
  index?: string;
  /** A name for the driver's own index (lowercase); default random. */
  ownIndexName?: string;
  /** Called last by close (e.g. to close a client the caller made for this target). */
  onClose?: () => Promise<void>;
}

/** The kind of an Elasticsearch request by its method and path: what the replicas repeat, what reads a copy, refreshes, searches. */
export function requestKind(method: string, path: string): RequestKind | undefined {
  if (path.includes('/_bulk')) return 'write';
  if (path.includes('/_refresh')) return 'refresh';
  if (/\/_(search|search_shards|count)\b/.test(path)) return 'search';
  if (/\/_(mget|doc)\b/.test(path) && (method === 'GET' || (method === 'POST' && path.includes('/_mget')))) return 'read';
  if (method === 'DELETE') return !path.startsWith('/_') && !/^\/[^/]+$/.test(path) ? 'write' : undefined;
  if ((method === 'PUT' || method === 'POST') && /\/_(doc|create|update)\//.test(path)) return 'write';
  return undefined;
}

/**
 * An engine on the lock store for the driver: the functions' client settings, a fresh token-signing
 * key (as the local stack gives the functions) and a lock index (its own unless `index` is given).
 */
export async function openEngineTarget(options: EngineTargetOptions): Promise<EngineTarget> {
  const made = options.client
    ? undefined
    : createSearchClient({ url: 'http://127.0.0.1:9200', ...options.connection, requestTimeoutMs: FUNCTION_ES_TIMEOUT_MS });
  const client = options.client ?? made!;
  const own = options.index === undefined;
  const index = options.index ?? options.ownIndexName ?? `lt-engine-locks-${randomBytes(4).toString('hex')}`;
  try {
    await ensureLockIndex(client, index);
  } catch (error) {
    await made?.close();
    throw error;
  }
  const { engine } = createLockEngine({ client, index, settings: { tokenSigningKey: randomBytes(32) } });
  let total = 0;
  const byKind = noRequests();
  let probes = 0;
  const count = (_error: unknown, event: { meta?: { request?: { params?: { method?: string; path?: string } } } } | null): void => {
    total++;
    const params = event?.meta?.request?.params;
    const kind = params ? requestKind(String(params.method ?? ''), String(params.path ?? '')) : undefined;
    if (!kind) return;
    byKind[kind]++;
    // The client emits this within the caller's async context: the operation that sent the request.
    const operation = operationRequests.getStore();
    if (operation) operation[kind]++;
  };
  client.diagnostic.on('request', count);
  return {
    engine,
    client,
    index,
    requests: () => ({ total, byKind: { ...byKind } }),
    nextProbe: () => ++probes,
    async sweepNamespace(namespace) {
      await client.indices.refresh({ index });
      // Held: a document with a holder. The tree strategy's ancestor markers (no holders) stay by design; they go too.
      const { count: held } = await client.count({ index, query: { bool: { filter: [{ term: { namespace } }, { exists: { field: 'holders.owner' } }] } } });
      // Search and bulk delete (Elasticsearch's test build has no _delete_by_query).
      for (let round = 0; round < 20; round++) {
        const found = await client.search({ index, query: { term: { namespace } }, size: 1000, _source: false });
        if (found.hits.hits.length === 0) break;
        await client.bulk({ refresh: true, operations: found.hits.hits.map((hit) => ({ delete: { _index: hit._index, _id: hit._id! } })) });
      }
      return held;
    },
    async close() {
      client.diagnostic.off('request', count);
      if (own) await deleteLockIndex(client, index).catch(() => {});
      await made?.close();
      await options.onClose?.();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// One probe.

export interface EngineDriverOptions {
  target: EngineTarget;
  strategy: Strategy;
  workload: WorkloadConfig;
  retry: RetryPolicy;
  ttlMs: number;
  /** Seconds each probe offers its rate. */
  probeS: number;
  /** In-flight ceiling (k6's maxVUs). */
  maxInFlight: number;
  objective: Objective;
  /** Names the owners and namespaces (a run id: letters, digits, `.`, `_`, `-`). */
  runId: string;
  /** Grace after the last second for operations still running (default PROBE_GRACEFUL_STOP_S). */
  gracefulStopS?: number;
  /** Default Math.random, as in k6. */
  random?: () => number;
}

export interface EngineProbeResult {
  verdict: ProbeVerdict;
  /** The probe as a stage, as summary.ts reads one from k6 (stage `engine-probe<rate>`). */
  stage: StageStats;
  /** Arrivals that found every slot busy (k6's dropped_iterations). */
  dropped: number;
  /** Operations still running at the end of the grace: offered, counted as nothing else. */
  interrupted: number;
  namespace: string;
  /** One line per critical section, `LTHOLD {json}` as k6 logs it. */
  holdLines: string[];
  /** The checker's verdict on holdLines (read back with parseHoldLog). */
  safety: SafetyReport;
  /** Elasticsearch requests the probe's operations sent (acquire, retries, release). */
  esRequests: number;
  /** Of those, the writes (bulk, index, create, delete): the ones replicas repeat. */
  esWrites: number;
  /** The same requests by kind (writes, reads, refreshes, searches), as the deployment model weighs them. */
  esRequestsByKind: PerKind;
  /** Mean time a completed operation spent in engine calls (acquire and release, backoff excluded), ms. */
  esMsPerOp: number;
  /** Mean backoff wait per completed operation, ms. */
  backoffMsPerOp: number;
  /**
   * The same figures per completed operation, each operation weighted by the files its lock covers
   * (a rename of a directory of 40 files counts 40 times): what another operation's acquire is
   * likely to run into, so what contention is made of. The deployment model scales the hold time by
   * these (model.ts), since a directory lock's slow refresh holds many files out at once.
   */
  perCoveredFile: { esMsPerOp: number; requestMix: PerKind };
  /** How late arrivals started against their due time (this process's own limit), ms. */
  schedule: { lagP99Ms: number; lagMaxMs: number; peakInFlight: number };
  /** Lock documents that still had a holder after every operation had finished (the namespace's documents are then deleted). */
  leftoverLocks: number;
  /** A few failed acquires or releases, in words (the totals are in stage.errors). */
  errorSamples: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** k6's trend percentile: linear interpolation between the sorted samples. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const at = (p / 100) * (sorted.length - 1);
  const low = Math.floor(at);
  const high = Math.min(sorted.length - 1, low + 1);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

function latencyOf(values: number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), count: sorted.length };
}

/** A probe's namespace: unique per probe, within the 64 characters a namespace may have. */
export function probeNamespace(strategy: Strategy, runId: string, probe: number): string {
  const suffix = `-p${probe}`;
  const head = `lt-e-${strategy}-${runId}`.replace(/[^A-Za-z0-9._:-]/g, '-');
  return `${head.slice(0, 64 - suffix.length)}${suffix}`;
}

/** What an engine error means to the k6 client: the functions' HTTP answer, classified as k6/api.ts does. */
export function httpAnswer(error: unknown): { kind: 'conflict' | 'unavailable' | 'error'; retryAfterMs?: number; status: number; detail: string } {
  const reply = errorReply(error);
  const header = Number(reply.headers['Retry-After']);
  const retryAfterMs =
    typeof reply.body.retryAfterMs === 'number' ? reply.body.retryAfterMs : Number.isFinite(header) && header > 0 ? header * 1000 : undefined;
  const hint = retryAfterMs === undefined ? {} : { retryAfterMs };
  // The engine's own words (an unmapped error's HTTP body says only "Internal error").
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (reply.statusCode === 409 || (reply.statusCode === 503 && reply.body.error === 'LockContentionError')) {
    return { kind: 'conflict', status: reply.statusCode, detail, ...hint };
  }
  if (reply.statusCode === 503) return { kind: 'unavailable', status: reply.statusCode, detail, ...hint };
  return { kind: 'error', status: reply.statusCode, detail };
}

/** The user's tree and the trace's operations, as locks.ts builds them from the workload's files. */
function userWorkload(workload: WorkloadConfig): { tree?: Tree; sequence?: Operation[] } {
  const { pathsFile, traceFile } = workload;
  const paths = pathsFile ? parsePathList(readFileSync(pathsFile, 'utf8'), pathsFile).paths : undefined;
  const trace = traceFile ? parseTrace(readFileSync(traceFile, 'utf8'), traceFile).entries : undefined;
  const tree = paths ? treeFromPaths(paths) : trace ? treeFromTrace(trace) : undefined;
  if (!tree) return {};
  return { tree, ...(trace ? { sequence: traceOperations(trace, tree) } : {}) };
}

interface Tally {
  offered: number;
  goodput: number;
  gaveUp: number;
  conflicts: number;
  retries: number;
  errors: number;
  acquireRequests: number;
  interrupted: number;
  acquireMs: number[];
  holdLines: string[];
  engineMs: number;
  backoffMs: number;
  /** Completed operations weighted by the files they cover: the weights, and weighted engine time and requests. */
  covered: { files: number; engineMs: number; requests: PerKind };
  errorSamples: string[];
}

/** Requests of the operation running in the current async context, by kind (engine calls only: the counter listens to the client). */
const operationRequests = new AsyncLocalStorage<PerKind>();

/** One probe: `rate` arrivals per second for options.probeS seconds, then the grace; every operation has ended when it returns. */
export async function driveEngine(options: EngineDriverOptions, rate: number): Promise<EngineProbeResult> {
  const { target, strategy, workload, probeS, maxInFlight } = options;
  const random = options.random ?? Math.random;
  const graceS = options.gracefulStopS ?? PROBE_GRACEFUL_STOP_S;
  const namespace = probeNamespace(strategy, options.runId, target.nextProbe());
  const user = userWorkload(workload);
  const source = operationSource(workload, user);
  const tally: Tally = {
    offered: 0,
    goodput: 0,
    gaveUp: 0,
    conflicts: 0,
    retries: 0,
    errors: 0,
    acquireRequests: 0,
    interrupted: 0,
    acquireMs: [],
    holdLines: [],
    engineMs: 0,
    backoffMs: 0,
    covered: { files: 0, engineMs: 0, requests: noRequests() },
    errorSamples: [],
  };
  const run = { stopped: false };
  const free = Array.from({ length: maxInFlight }, (_, i) => maxInFlight - i);
  const running = new Set<Promise<void>>();
  const lags: number[] = [];
  let dropped = 0;
  let peak = 0;
  const before = target.requests();

  const total = Math.round(rate * probeS);
  const interval = 1000 / rate;
  const started = performance.now();
  const grace = setTimeout(
    () => {
      run.stopped = true;
    },
    (probeS + graceS) * 1000,
  );
  for (let i = 0; i < total; ) {
    for (; i < total && started + i * interval <= performance.now(); i++) {
      lags.push(performance.now() - (started + i * interval));
      const vu = free.pop();
      if (vu === undefined) {
        dropped++;
        continue;
      }
      const iteration = tally.offered++;
      const op = source.next(random, user.sequence ? iteration : undefined);
      const owner = `${options.runId}-${strategy}-vu${vu}`;
      const requests = noRequests();
      const operation: Promise<void> = operationRequests
        .run(requests, () => iterate(options, op, namespace, owner, `${owner}-steady-${iteration}`, random, tally, run, requests))
        .catch((error: unknown) => {
          // Not an answer of the engine (those are classified in iterate): the driver's own failure, counted as an error.
          tally.errors++;
          if (tally.errorSamples.length < 3) tally.errorSamples.push(`driver: ${(error as Error).message}`);
        })
        .finally(() => {
          running.delete(operation);
          free.push(vu);
        });
      running.add(operation);
      peak = Math.max(peak, running.size);
    }
    if (i < total) await sleep(started + i * interval - performance.now());
  }
  await Promise.all(running);
  clearTimeout(grace);
  const after = target.requests();
  const leftoverLocks = await target.sweepNamespace(namespace);

  const acquire = latencyOf(tally.acquireMs);
  const stage: StageStats = {
    stage: `engine-probe${rate}`,
    offeredRate: rate,
    offered: tally.offered,
    goodput: tally.goodput,
    goodputRate: tally.goodput / probeS,
    gaveUp: tally.gaveUp,
    conflicts: tally.conflicts,
    retries: tally.retries,
    errors: tally.errors,
    conflictRate: tally.acquireRequests > 0 ? tally.conflicts / tally.acquireRequests : 0,
    acquire,
  };
  // k6's `errors` rate: one sample per operation that reached an end (done, gave up, or failed).
  const ended = tally.goodput + tally.gaveUp + tally.errors;
  const verdict = judge(
    { rate, goodputRate: stage.goodputRate, acquireP99: acquire.p99, errorRate: ended > 0 ? tally.errors / ended : 0, dropped },
    options.objective,
  );
  const parsed = parseHoldLog(tally.holdLines.join('\n'));
  const done = Math.max(1, tally.goodput);
  const sortedLags = lags.sort((a, b) => a - b);
  return {
    verdict,
    stage,
    dropped,
    interrupted: tally.interrupted,
    namespace,
    holdLines: tally.holdLines,
    safety: checkHolds(parsed.holds),
    esRequests: after.total - before.total,
    esWrites: after.byKind.write - before.byKind.write,
    esRequestsByKind: perKind((kind) => after.byKind[kind] - before.byKind[kind]),
    esMsPerOp: tally.engineMs / done,
    backoffMsPerOp: tally.backoffMs / done,
    perCoveredFile: {
      esMsPerOp: tally.covered.files > 0 ? tally.covered.engineMs / tally.covered.files : 0,
      requestMix: perKind((kind) => (tally.covered.files > 0 ? tally.covered.requests[kind] / tally.covered.files : 0)),
    },
    schedule: { lagP99Ms: percentile(sortedLags, 99), lagMaxMs: sortedLags.at(-1) ?? 0, peakInFlight: peak },
    leftoverLocks,
    errorSamples: tally.errorSamples,
  };
}

/** One k6 iteration of loadtests/k6/locks.ts, against the engine: acquire with retries, the critical section, release, the hold line. */
async function iterate(
  options: EngineDriverOptions,
  op: Operation,
  namespace: string,
  owner: string,
  requestId: string,
  random: () => number,
  tally: Tally,
  run: { stopped: boolean },
  requests: PerKind,
): Promise<void> {
  const { engine } = options.target;
  const { retry, ttlMs, strategy } = options;
  const plan = lockPlan(strategy, op);
  const sample = (text: string): void => {
    if (tally.errorSamples.length < 3) tally.errorSamples.push(text);
  };
  const began = performance.now();
  const beganWall = Date.now();
  let waited = 0;
  let grant: Grant | undefined;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0 && run.stopped) {
      tally.interrupted++;
      return;
    }
    tally.acquireRequests++;
    let answer: ReturnType<typeof httpAnswer>;
    try {
      grant = await engine.acquire({
        namespace,
        granularity: plan.granularity,
        ...(plan.ids ? { ids: plan.ids } : {}),
        ...(plan.path ? { path: plan.path } : {}),
        mode: plan.mode,
        owner,
        ttlMs,
        requestId,
      });
      break;
    } catch (error) {
      answer = httpAnswer(error);
    }
    if (run.stopped) {
      tally.interrupted++;
      return;
    }
    if (answer.kind === 'error') {
      tally.errors++;
      sample(`acquire ${answer.status} ${answer.detail}`);
      return;
    }
    if (answer.kind === 'conflict') tally.conflicts++;
    const delay = retryDelayMs(retry, attempt, answer.retryAfterMs, random);
    if (Date.now() + delay - beganWall > retry.budgetMs) {
      // Contention is "busy, try later" (gave up); a store that stayed unavailable is an error.
      if (answer.kind === 'conflict') tally.gaveUp++;
      else {
        tally.errors++;
        sample(`acquire ${answer.status}: store unavailable until the retry budget ran out`);
      }
      return;
    }
    tally.retries++;
    waited += delay;
    await sleep(delay);
  }

  const start = Date.now();
  const acquired = performance.now() - began;
  if (!run.stopped) tally.acquireMs.push(acquired);
  if (options.workload.criticalSectionMs > 0) await sleep(options.workload.criticalSectionMs);
  const end = Date.now();
  let releaseOutcome = 'error';
  const releasing = performance.now();
  for (let attempt = 0; attempt < RELEASE_ATTEMPTS; attempt++) {
    try {
      releaseOutcome = (await engine.release({ leaseToken: grant.leaseToken })).outcome;
      break;
    } catch (error) {
      const answer = httpAnswer(error);
      if (answer.status !== 503) {
        sample(`release ${answer.status} ${answer.detail}`);
        break;
      }
      await sleep(backoffDelayMs(RELEASE_BACKOFF, attempt, random));
    }
  }
  const record: HoldRecord = {
    strategy,
    namespace,
    op: op.kind,
    mode: plan.mode,
    keys: plan.keys,
    fence: grant.fencingToken,
    start,
    end,
    expiresAt: grant.expiresAt,
    owner,
    release: releaseOutcome,
    target: op.target,
  };
  tally.holdLines.push(HOLD_MARKER + JSON.stringify(record));
  if (run.stopped) {
    tally.interrupted++;
    return;
  }
  if (releaseOutcome === 'error') {
    tally.errors++;
    return;
  }
  const engineMs = acquired - waited + (performance.now() - releasing);
  tally.engineMs += engineMs;
  tally.backoffMs += waited;
  tally.goodput++;
  const files = Math.max(1, op.files.length);
  tally.covered.files += files;
  tally.covered.engineMs += files * engineMs;
  for (const kind of REQUEST_KINDS) tally.covered.requests[kind] += files * requests[kind];
}

// ---------------------------------------------------------------------------------------------
// The capacity search's probe, and the search itself.

/** A probe for `searchCapacity`: each call runs one driveEngine probe; every full result is kept in `runs`. */
export interface EngineProbe {
  (rate: number): Promise<ProbeVerdict>;
  readonly runs: EngineProbeResult[];
}

export function engineProbe(options: EngineDriverOptions, onProbe?: (result: EngineProbeResult) => void): EngineProbe {
  const runs: EngineProbeResult[] = [];
  const probe = async (rate: number): Promise<ProbeVerdict> => {
    const result = await driveEngine(options, rate);
    runs.push(result);
    onProbe?.(result);
    return result.verdict;
  };
  return Object.assign(probe, { runs });
}

/** The driver's settings as the kit's configuration gives them (retry, TTL, VU ceiling, objective, engine probe length). */
export function engineDriverOptions(
  config: LoadtestConfig,
  args: { target: EngineTarget; strategy: Strategy; workload: WorkloadConfig; runId: string; probeS?: number },
): EngineDriverOptions {
  return {
    target: args.target,
    strategy: args.strategy,
    workload: args.workload,
    retry: config.retry,
    ttlMs: config.ttlMs,
    probeS: args.probeS ?? config.engine.probeS,
    maxInFlight: config.schedule.vus.max,
    objective: config.capacity.objective,
    runId: args.runId,
  };
}

export interface EngineCapacity {
  strategy: Strategy;
  search: CapacityResult;
  /** Every probe's full result, in the order run. */
  runs: EngineProbeResult[];
  /** No probe's critical sections broke the checker's rules. */
  safetyOk: boolean;
  violationCount: number;
  /** Semantic conflicts (checker.ts phantoms) over all probes. */
  phantomCount: number;
  /** Elasticsearch requests per completed operation at the capacity (0 when no probe was good). */
  requestsPerOp: number;
}

/** The kit's capacity search (capacity.ts) over the engine driver. */
export async function searchEngineCapacity(
  options: EngineDriverOptions,
  settings: SearchSettings,
  hint?: Bracket,
  onProbe?: (result: EngineProbeResult) => void,
): Promise<EngineCapacity> {
  const probe = engineProbe(options, onProbe);
  const search = await searchCapacity(probe, settings, hint);
  const atCapacity = probe.runs.find((run) => run.verdict.good && run.verdict.rate === search.capacity);
  return {
    strategy: options.strategy,
    search,
    runs: probe.runs,
    safetyOk: probe.runs.every((run) => run.safety.ok),
    violationCount: probe.runs.reduce((sum, run) => sum + run.safety.violationCount, 0),
    phantomCount: probe.runs.reduce((sum, run) => sum + run.safety.phantomCount, 0),
    requestsPerOp: atCapacity && atCapacity.stage.goodput > 0 ? atCapacity.esRequests / atCapacity.stage.goodput : 0,
  };
}
