/** What every report is made from: the run's facts and its results, grouped by workload. */
import type { WorkloadConfig } from '../../../loadtests/lib/workload.js';
import type { LoadtestConfig } from '../config.js';
import { KEEP_UP_RATIO, type StrategyResult } from '../summary.js';

export interface RunInfo {
  runId: string;
  startedAt: string;
  finishedAt: string;
  baseUrl: string;
  mode: 'local' | 'target';
  k6: string;
  config: LoadtestConfig;
  seeded?: { index: string; documents: number };
  /** Extra notes (e.g. an interrupted run). */
  notes: string[];
}

export interface ReportInput {
  info: RunInfo;
  results: StrategyResult[];
}

/** The configured workloads that have results, each with its results. */
export function workloadsOf(input: ReportInput): Array<{ workload: WorkloadConfig; results: StrategyResult[] }> {
  return input.info.config.workloads
    .map((workload) => ({ workload, results: input.results.filter((r) => r.workload === workload.name) }))
    .filter((entry) => entry.results.length > 0);
}

/** How the run was made, as markdown list items. */
export function settingsLines(info: RunInfo): string[] {
  const { schedule, retry } = info.config;
  return [
    `- run ${info.runId}, ${info.startedAt} to ${info.finishedAt}, ${info.mode === 'target' ? `against ${info.baseUrl}` : `local stack at ${info.baseUrl}`}, ${info.k6}`,
    `- steady: constant-arrival-rate ${schedule.steady.rate} ops/s for ${schedule.steady.durationS} s; ` +
      (schedule.ramp.levels.length > 0
        ? `ramp: ramping-arrival-rate through ${schedule.ramp.levels.join(', ')} ops/s, ${schedule.ramp.stepS} s per level`
        : 'no ramp'),
    `- client: retries 409/503 with exponential backoff ${retry.baseDelayMs}-${retry.maxDelayMs} ms and jitter` +
      `${retry.honourRetryAfter ? ', waiting at least retryAfterMs (capped at the backoff maximum)' : ''}; gives up after ${retry.budgetMs} ms; lease TTL ${info.config.ttlMs} ms`,
    `- goodput = operations that acquired, ran their critical section and released; saturation = between the highest ramp level where goodput stayed >= ${KEEP_UP_RATIO * 100}% of offered and the next level (* = a lower level fell short too, a transient stall)`,
    ...(info.seeded ? [`- tree seeded into Elasticsearch index \`${info.seeded.index}\` (${info.seeded.documents} documents)`] : []),
    ...info.notes.map((note) => `- note: ${note}`),
  ];
}
