/** What every report is made from: the run's facts and its results, grouped by workload. */

import { MARGINAL_P99_FACTOR } from '../../shared/objective.js';
import type { WorkloadConfig } from '../../shared/workload.js';
import type { LoadtestConfig } from '../config.js';
import type { GranularityResult } from '../summary.js';

export interface RunInfo {
  runId: string;
  startedAt: string;
  finishedAt: string;
  baseUrl: string;
  mode: 'local' | 'target';
  k6: string;
  /** The lock store's server and version, when known here (not with --target unless ES_URL / OPENSEARCH_URL names it). */
  server?: { label: string; url: string };
  config: LoadtestConfig;
  seeded?: { index: string; documents: number };
  /** Extra notes (e.g. an interrupted run). */
  notes: string[];
}

export interface ReportInput {
  info: RunInfo;
  results: GranularityResult[];
}

/** The configured workloads that have results, each with its results. */
export function workloadsOf(input: ReportInput): Array<{ workload: WorkloadConfig; results: GranularityResult[] }> {
  return input.info.config.workloads
    .map((workload) => ({ workload, results: input.results.filter((r) => r.workload === workload.name) }))
    .filter((entry) => entry.results.length > 0);
}

/** How the run was made, as markdown list items. */
export function settingsLines(info: RunInfo): string[] {
  const { schedule, retry, capacity, trials } = info.config;
  const { objective, search } = capacity;
  return [
    `- run ${info.runId}, ${info.startedAt} to ${info.finishedAt}, ${info.mode === 'target' ? `against ${info.baseUrl}` : `local stack at ${info.baseUrl}`}, ${info.k6}`,
    `- lock store: ${info.server ? `${info.server.label} at ${info.server.url}` : 'not known here (--target without ES_URL or OPENSEARCH_URL)'}`,
    `- ${trials} trial${trials === 1 ? '' : 's'} per granularity, interleaved (trial 1 of every granularity, then trial 2...); figures are medians, ranges in brackets`,
    `- expected rate: constant-arrival-rate ${schedule.steady.rate} ops/s for ${schedule.steady.durationS} s` +
      (schedule.ramp.levels.length > 0 ? `, then a ramp through ${schedule.ramp.levels.join(', ')} ops/s, ${schedule.ramp.stepS} s per level` : ''),
    ...(capacity.enabled
      ? [
          `- capacity: the highest offered rate with goodput >= ${objective.goodputRatio * 100}% of offered, acquire p99 <= ${objective.p99Ms} ms and < ${objective.errorRate * 100}% errors; ` +
            `found by ${capacity.probeS} s probes, doubling from ${search.startRate} ops/s until one misses, then bisecting to ${search.resolution * 100}% ` +
            `(at most ${search.maxProbes} probes; later trials start from trial 1's bracket, check both ends and stop after ${search.maxProbesFromBracket}` +
            `${search.confirmMarginalMisses ? `; a miss on the p99 alone by less than ${MARGINAL_P99_FACTOR}x is probed again and counts only if it repeats` : ''})`,
        ]
      : []),
    `- client: retries 409/503 with exponential backoff ${retry.baseDelayMs}-${retry.maxDelayMs} ms and jitter` +
      `${retry.honourRetryAfter ? ', waiting at least retryAfterMs (capped at the backoff maximum)' : ''}; gives up after ${retry.budgetMs} ms; lease TTL ${info.config.ttlMs} ms`,
    "- goodput = operations that acquired, ran their critical section and released; a granularity wins only where its range does not overlap the others'",
    ...(info.seeded ? [`- tree seeded into index \`${info.seeded.index}\` (${info.seeded.documents} documents)`] : []),
    ...info.notes.map((note) => `- note: ${note}`),
  ];
}
