/**
 * The engine-only layer as the orchestrator (run.ts, loadtest.ts) and the deployment model
 * (loadtest-model.ts) use it: one lock index of its own per run, probes by workload, strategy and
 * rate. The work is the engine driver's (engine-driver.ts): the k6 iteration, operation for
 * operation, through the engine in this process, open model, same objective and safety checker.
 */
import type { Client } from '@elastic/elasticsearch';
import type { Strategy, WorkloadConfig } from '../../loadtests/lib/workload.js';
import type { Objective } from './capacity.js';
import type { LoadtestConfig } from './config.js';
import { driveEngine, type EngineProbeResult, type EngineTarget, openEngineTarget } from './engine-driver.js';
import { log } from './log.js';

/** One probe's figures (the driver's full result). */
export type EngineProbeRun = EngineProbeResult;

/** The engine-only layer over one Elasticsearch client: a lock index of its own, dropped on close. */
export class EngineLayer {
  constructor(
    private readonly target: EngineTarget,
    private readonly config: LoadtestConfig,
    private readonly runId: string,
  ) {}

  static async open(client: Client, config: LoadtestConfig, runId: string, onClose: () => Promise<void> = async () => {}): Promise<EngineLayer> {
    const target = await openEngineTarget({ client, ownIndexName: `lt-engine-locks-${runId.toLowerCase()}`, onClose });
    return new EngineLayer(target, config, runId);
  }

  async close(): Promise<void> {
    await this.target.close();
  }

  /** One probe: `rate` operations per second for `seconds`, then the in-flight ones finish. */
  probe(workload: WorkloadConfig, strategy: Strategy, rate: number, seconds: number, trial: number, objective: Objective): Promise<EngineProbeRun> {
    return driveEngine(
      {
        target: this.target,
        strategy,
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

/** The engine-only layer on `esUrl` (ES_API_KEY if set), with a client of its own; undefined when it cannot be opened. */
export async function openEngineLayer(esUrl: string, runId: string, config: LoadtestConfig): Promise<EngineLayer | undefined> {
  try {
    const target = await openEngineTarget({
      url: esUrl.split(','),
      ...(process.env.ES_API_KEY ? { apiKey: process.env.ES_API_KEY } : {}),
      ownIndexName: `lt-engine-locks-${runId.toLowerCase()}`,
    });
    return new EngineLayer(target, config, runId);
  } catch (error) {
    log(`the engine-only layer could not start on ${esUrl}: ${(error as Error).message}`);
    return undefined;
  }
}
