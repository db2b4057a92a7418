/**
 * The engine-only layer as the orchestrator (run.ts, commands/loadtest.ts) and the deployment model
 * (commands/loadtest-model.ts) use it: one lock index of its own per run, probes by workload,
 * granularity and rate. The work is the engine driver's (probe.ts): the kit's one iteration through the
 * engine in this process, open model, same objective and safety checker.
 */
import type { SearchClient } from '../../../functions/store/search-client.js';
import type { StoreEndpoint } from '../../../infra/lib/store-target.js';
import type { Objective } from '../../shared/objective.js';
import type { Granularity, WorkloadConfig } from '../../shared/workload.js';
import { type Bracket, type SearchSettings, searchCapacity } from '../capacity.js';
import type { LoadtestConfig } from '../config.js';
import { log } from '../log.js';
import { type Calibration, type P99Point, perKind } from '../model.js';
import type { EngineResult } from '../summary.js';
import { driveEngine } from './probe.js';
import type { EngineProbeResult } from './probe-result.js';
import { type EngineTarget, openEngineTarget } from './target.js';

/**
 * The model is calibrated with an operation's cost at a light load: a probe at or below half the
 * capacity found, else one more at a quarter of it. Near capacity the figures are contention's
 * (global's lightest met probe, 20 of 23 ops/s, measured 36 requests and 2.3 s per operation).
 */
export const CALIBRATION_MAX_LOAD = 0.5;
export const CALIBRATION_LOAD = 0.25;

export interface EngineSearchOptions {
  probeS: number;
  objective: Objective;
  search: SearchSettings;
  hint?: Bracket;
}

/** One probe's figures (the driver's full result). */
export type EngineProbeRun = EngineProbeResult;

/** The engine-only layer over one search client: a lock index of its own, dropped on close. */
export class EngineLayer {
  constructor(
    private readonly target: EngineTarget,
    private readonly config: LoadtestConfig,
    private readonly runId: string,
  ) {}

  static async open(client: SearchClient, config: LoadtestConfig, runId: string, onClose: () => Promise<void> = async () => {}): Promise<EngineLayer> {
    const target = await openEngineTarget({ client, ownIndexName: `lt-engine-locks-${runId.toLowerCase()}`, onClose });
    return new EngineLayer(target, config, runId);
  }

  /** The search client the engine uses. */
  get client(): SearchClient {
    return this.target.client;
  }

  async close(): Promise<void> {
    await this.target.close();
  }

  /**
   * The capacity search through the engine alone (same workload, objective and search as through
   * HTTP), the deployment model's calibration at a light load, and the safety of every probe.
   */
  async searchCapacity(workload: WorkloadConfig, granularity: Granularity, trial: number, options: EngineSearchOptions): Promise<EngineResult> {
    const { probeS, objective, search: settings } = options;
    const runs = new Map<number, EngineProbeRun>();
    const p99Curve: P99Point[] = [];
    let violations = 0;
    let phantoms = 0;
    const probe = async (rate: number): Promise<EngineProbeRun> => {
      const run = await this.probe(workload, granularity, rate, probeS, trial, objective);
      violations += run.safety.violationCount;
      phantoms += run.safety.phantomCount;
      if (run.verdict.good || !runs.get(rate)?.verdict.good) runs.set(rate, run);
      p99Curve.push({ rate, p99Ms: run.stage.acquire.p99 });
      return run;
    };
    const search = await searchCapacity((rate) => probe(rate).then((run) => run.verdict), settings, options.hint);
    let light = [...runs.values()]
      .filter((run) => run.verdict.good && run.stage.goodput > 0 && run.verdict.rate <= search.capacity * CALIBRATION_MAX_LOAD)
      .sort((a, b) => a.verdict.rate - b.verdict.rate)[0];
    if (!light && search.capacity > 0) {
      const extra = await probe(Math.max(settings.minRate, Math.round(search.capacity * CALIBRATION_LOAD)));
      if (extra.stage.goodput > 0) light = extra;
    }
    const atCapacity = runs.get(search.capacity);
    return {
      capacity: search,
      requestsPerOp: atCapacity && atCapacity.stage.goodput > 0 ? atCapacity.esRequests / atCapacity.stage.goodput : 0,
      ...(light
        ? {
            calibration: calibrationOf(granularity, workload, light, search.capacity, { objectiveMs: objective.p99Ms, curve: p99Curve }),
            calibratedAt: light.verdict.rate,
          }
        : {}),
      safetyOk: violations === 0,
      violationCount: violations,
      phantomCount: phantoms,
    };
  }

  /** One probe: `rate` operations per second for `seconds`, then the in-flight ones finish. */
  probe(workload: WorkloadConfig, granularity: Granularity, rate: number, seconds: number, trial: number, objective: Objective): Promise<EngineProbeRun> {
    return driveEngine(
      {
        target: this.target,
        granularity,
        workload,
        retry: this.config.retry,
        ttlMs: this.config.ttlMs,
        probeS: seconds,
        maxInFlight: this.config.schedule.vus.max,
        objective,
        runId: `${this.runId}-t${trial}`,
      },
      rate,
    );
  }
}

function calibrationOf(
  granularity: Granularity,
  workload: WorkloadConfig,
  light: EngineProbeRun,
  capacity: number,
  p99: { objectiveMs: number; curve: P99Point[] },
): Calibration {
  return {
    granularity,
    capacity,
    requestsPerOp: light.esRequests / light.stage.goodput,
    writeShare: light.esRequests > 0 ? light.esWrites / light.esRequests : 0,
    requestMix: perKind((kind) => light.esRequestsByKind[kind] / light.stage.goodput),
    perCoveredFile: light.perCoveredFile,
    esMsPerOp: light.esMsPerOp,
    esMsByKind: light.esMsByKind,
    backoffMsPerOp: light.backoffMsPerOp,
    criticalSectionMs: workload.criticalSectionMs,
    // Each kind of operation's requests as the light load shows them (few of contention's retries).
    p99: { ...p99, requestsByOp: light.requestsByOp },
  };
}

/** The engine-only layer on the lock store, with a client of its own; undefined when it cannot be opened. */
export async function openEngineLayer(store: StoreEndpoint, runId: string, config: LoadtestConfig): Promise<EngineLayer | undefined> {
  try {
    const target = await openEngineTarget({ connection: store.connection(), ownIndexName: `lt-engine-locks-${runId.toLowerCase()}` });
    return new EngineLayer(target, config, runId);
  } catch (error) {
    log(`the engine-only layer could not start on ${store.name} ${store.url}: ${(error as Error).message}`);
    return undefined;
  }
}
