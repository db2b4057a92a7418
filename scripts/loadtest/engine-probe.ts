/**
 * The lock layer alone: the same workload, operation by operation as the k6 script runs it, but
 * calling the engine in this process (no HTTP, no serverless-offline) against the same
 * Elasticsearch. Its probes are judged by the same objective and its critical sections by the same
 * safety checker, so the report can say how much capacity the locks allow and how much the local
 * HTTP emulation takes away.
 *
 * Open model, like k6's constant-arrival-rate: arrival i is due at start + i / rate (computed from
 * the start, so timer lateness does not accumulate), at most `maxInFlight` operations run at once
 * (k6's VU ceiling) and an arrival that finds none free is dropped and counted. One Elasticsearch
 * client for all operations: a warm fleet of functions holds one client each, and what is measured
 * here is the lock index's work per operation, not connection set-up.
 */
import type { Client } from '@elastic/elasticsearch';
import type { LockEngine } from '../../functions/core/engine.js';
import { LockContentionError, LockHeldError, StoreUnavailableError } from '../../functions/core/errors.js';
import { createElasticsearchClient, createLockEngine, deleteLockIndex, ensureLockIndex } from '../../functions/store/index.js';
import { backoffDelayMs, retryDelayMs } from '../../loadtests/lib/backoff.js';
import { type HoldRecord, lockPlan, type Operation, operationSource, type Strategy, type WorkloadConfig } from '../../loadtests/lib/workload.js';
import { judge, type Objective, type ProbeVerdict } from './capacity.js';
import { checkHolds, type SafetyReport } from './checker.js';
import type { LoadtestConfig } from './config.js';
import { log } from './log.js';
import type { Latency, StageStats } from './summary.js';
import { treeOfWorkload } from './user-workload.js';

export interface EngineProbeRun {
  verdict: ProbeVerdict;
  stage: StageStats;
  safety: SafetyReport;
  /** Elasticsearch requests the probe's operations sent (acquire, retries, release). */
  esRequests: number;
  /** Of those, the writes (bulk, index, create, delete): the ones replicas repeat. */
  esWrites: number;
  /** Mean time an operation spent in Elasticsearch requests (acquire and release, backoff waits excluded), ms. */
  esMsPerOp: number;
  /** Mean backoff wait per completed operation, ms. */
  backoffMsPerOp: number;
}

/** A write the replicas repeat: bulk, index/create/update of a document, delete. */
export function isWriteRequest(method: string, path: string): boolean {
  if (path.includes('/_bulk')) return true;
  if (method === 'DELETE') return !path.startsWith('/_') && !/^\/[^/]+$/.test(path);
  return (method === 'PUT' || method === 'POST') && /\/_(doc|create|update)\//.test(path);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function latencyOf(values: number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), count: sorted.length };
}

interface Tally {
  offered: number;
  goodput: number;
  gaveUp: number;
  conflicts: number;
  retries: number;
  errors: number;
  acquireAttempts: number;
  dropped: number;
  acquireMs: number[];
  holds: HoldRecord[];
  esMs: number;
  backoffMs: number;
}

/** The engine-only layer over one Elasticsearch client: a lock index of its own, dropped on close. */
export class EngineLayer {
  private readonly engine: LockEngine;
  private requests = 0;
  private writes = 0;
  private readonly count = (_error: unknown, event: { meta?: { request?: { params?: { method?: string; path?: string } } } } | null) => {
    this.requests++;
    const params = event?.meta?.request?.params;
    if (params && isWriteRequest(String(params.method ?? ''), String(params.path ?? ''))) this.writes++;
  };

  private constructor(
    private readonly client: Client,
    private readonly index: string,
    private readonly config: LoadtestConfig,
    private readonly runId: string,
    private readonly onClose: () => Promise<void>,
  ) {
    this.engine = createLockEngine({ client, index }).engine;
    client.diagnostic.on('request', this.count);
  }

  static async open(client: Client, config: LoadtestConfig, runId: string, onClose: () => Promise<void> = async () => {}): Promise<EngineLayer> {
    const index = `lt-engine-locks-${runId.toLowerCase()}`;
    await ensureLockIndex(client, index);
    return new EngineLayer(client, index, config, runId, onClose);
  }

  async close(): Promise<void> {
    this.client.diagnostic.off('request', this.count);
    await deleteLockIndex(this.client, this.index).catch(() => {});
    await this.onClose();
  }

  /** One probe: `rate` operations per second for `seconds`, then the in-flight ones finish. */
  async probe(workload: WorkloadConfig, strategy: Strategy, rate: number, seconds: number, trial: number, objective: Objective): Promise<EngineProbeRun> {
    const source = operationSource(workload, workload.pathsFile || workload.traceFile ? { tree: treeOfWorkload(workload) } : {});
    const namespace = `lt-e-${strategy}-${this.runId}-t${trial}-p${rate}`.replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 64);
    const tally: Tally = {
      offered: 0,
      goodput: 0,
      gaveUp: 0,
      conflicts: 0,
      retries: 0,
      errors: 0,
      acquireAttempts: 0,
      dropped: 0,
      acquireMs: [],
      holds: [],
      esMs: 0,
      backoffMs: 0,
    };
    const writesBefore = this.writes;
    const maxInFlight = this.config.schedule.vus.max;
    const requestsBefore = this.requests;
    const running = new Set<Promise<void>>();
    const started = performance.now();
    const total = Math.round(rate * seconds);
    for (let i = 0; i < total; i++) {
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait > 0) await sleep(wait);
      if (running.size >= maxInFlight) {
        tally.dropped++;
        continue;
      }
      tally.offered++;
      const op = source.next(Math.random);
      const run: Promise<void> = this.operation(op, strategy, namespace, `${namespace}-${i}`, workload.criticalSectionMs, tally).finally(() =>
        running.delete(run),
      );
      running.add(run);
    }
    await Promise.all(running);
    const acquire = latencyOf(tally.acquireMs);
    const stage: StageStats = {
      stage: `engine-probe${rate}`,
      offeredRate: rate,
      offered: tally.offered,
      goodput: tally.goodput,
      goodputRate: tally.goodput / seconds,
      gaveUp: tally.gaveUp,
      conflicts: tally.conflicts,
      retries: tally.retries,
      errors: tally.errors,
      conflictRate: tally.acquireAttempts > 0 ? tally.conflicts / tally.acquireAttempts : 0,
      acquire,
    };
    const verdict = judge(
      {
        rate,
        goodputRate: stage.goodputRate,
        acquireP99: acquire.p99,
        errorRate: tally.offered > 0 ? tally.errors / tally.offered : 0,
        dropped: tally.dropped,
      },
      objective,
    );
    const done = Math.max(1, tally.goodput);
    return {
      verdict,
      stage,
      safety: checkHolds(tally.holds),
      esRequests: this.requests - requestsBefore,
      esWrites: this.writes - writesBefore,
      esMsPerOp: tally.esMs / done,
      backoffMsPerOp: tally.backoffMs / done,
    };
  }

  /** What one k6 iteration does (loadtests/locks.ts): acquire with retries, the critical section, release. */
  private async operation(op: Operation, strategy: Strategy, namespace: string, requestId: string, criticalSectionMs: number, tally: Tally): Promise<void> {
    const { retry, ttlMs } = this.config;
    const plan = lockPlan(strategy, op);
    const owner = requestId;
    const began = performance.now();
    let waited = 0;
    let grant: Awaited<ReturnType<LockEngine['acquire']>> | undefined;
    for (let attempt = 0; ; attempt++) {
      tally.acquireAttempts++;
      let retryAfterMs: number | undefined;
      try {
        grant = await this.engine.acquire({
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
        if (error instanceof LockHeldError) {
          tally.conflicts++;
          retryAfterMs = error.retryAfterMs;
        } else if (!(error instanceof StoreUnavailableError || error instanceof LockContentionError)) {
          tally.errors++;
          return;
        }
        const delay = retryDelayMs(retry, attempt, retryAfterMs, Math.random);
        if (performance.now() + delay - began > retry.budgetMs) {
          if (error instanceof LockHeldError) tally.gaveUp++;
          else tally.errors++;
          return;
        }
        tally.retries++;
        waited += delay;
        await sleep(delay);
      }
    }
    const start = Date.now();
    const acquired = performance.now() - began;
    tally.acquireMs.push(acquired);
    tally.esMs += acquired - waited;
    tally.backoffMs += waited;
    if (criticalSectionMs > 0) await sleep(criticalSectionMs);
    const end = Date.now();
    let outcome = 'error';
    const releasing = performance.now();
    for (let attempt = 0; attempt < 6; attempt++) {
      try {
        outcome = (await this.engine.release({ leaseToken: grant.leaseToken })).outcome;
        break;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError || error instanceof LockContentionError)) break;
        await sleep(backoffDelayMs({ baseMs: 100, maxMs: 3200 }, attempt, Math.random));
      }
    }
    tally.esMs += performance.now() - releasing;
    tally.holds.push({
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
      release: outcome,
      target: op.target,
    });
    if (outcome === 'error') tally.errors++;
    else tally.goodput++;
  }
}

/** The engine-only layer on `esUrl` (ES_API_KEY if set), with a client of its own; undefined when it cannot be opened. */
export async function openEngineLayer(esUrl: string, runId: string, config: LoadtestConfig): Promise<EngineLayer | undefined> {
  const client = createElasticsearchClient({ url: esUrl, ...(process.env.ES_API_KEY ? { apiKey: process.env.ES_API_KEY } : {}), requestTimeoutMs: 10_000 });
  try {
    return await EngineLayer.open(client, config, runId, () => client.close());
  } catch (error) {
    await client.close();
    log(`the engine-only layer could not start on ${esUrl}: ${(error as Error).message}`);
    return undefined;
  }
}
