/** The kit's capacity search (capacity.ts) over engine probes: what `npm run loadtest:engine` runs per granularity. */

import type { ProbeVerdict } from '../../shared/objective.js';
import type { Granularity, WorkloadConfig } from '../../shared/workload.js';
import { type Bracket, type CapacityResult, type SearchSettings, searchCapacity } from '../capacity.js';
import type { LoadtestConfig } from '../config.js';
import { driveEngine, type EngineDriverOptions } from './probe.js';
import type { EngineProbeResult } from './probe-result.js';
import type { EngineTarget } from './target.js';

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
  args: { target: EngineTarget; granularity: Granularity; workload: WorkloadConfig; runId: string; probeS?: number },
): EngineDriverOptions {
  return {
    target: args.target,
    granularity: args.granularity,
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
  granularity: Granularity;
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
    granularity: options.granularity,
    search,
    runs: probe.runs,
    safetyOk: probe.runs.every((run) => run.safety.ok),
    violationCount: probe.runs.reduce((sum, run) => sum + run.safety.violationCount, 0),
    phantomCount: probe.runs.reduce((sum, run) => sum + run.safety.phantomCount, 0),
    requestsPerOp: atCapacity && atCapacity.stage.goodput > 0 ? atCapacity.esRequests / atCapacity.stage.goodput : 0,
  };
}
