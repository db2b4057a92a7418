/**
 * The one-line summary of a run's steady phase, from k6's summary data: what handleSummary prints
 * for a run with SUMMARY_PATH, and what the orchestrator prints under k6's own end-of-test summary.
 */

/** The part of k6's summary data the line reads (handleSummary's argument, or --summary-export normalised). */
export interface SummaryMetrics {
  metrics: Record<string, { values: Record<string, number> } | undefined>;
}

export function summaryLine(granularity: string, steady: { rate: number; durationS: number }, data: SummaryMetrics): string {
  const count = (name: string): number => data.metrics[name]?.values.count ?? 0;
  const trend = (name: string, stat: string): string => (data.metrics[name]?.values[stat] ?? 0).toFixed(1);
  return (
    `[${granularity}] steady ${steady.rate}/s for ${steady.durationS}s: goodput ${count('goodput{stage:steady}')}` +
    ` of ${count('ops_offered{stage:steady}')} offered, acquire p50/p95/p99 ${trend('acquire_latency{stage:steady}', 'med')}/` +
    `${trend('acquire_latency{stage:steady}', 'p(95)')}/${trend('acquire_latency{stage:steady}', 'p(99)')} ms,` +
    ` conflicts ${count('conflicts{stage:steady}')}, retries ${count('retries{stage:steady}')},` +
    ` gave up ${count('gave_up{stage:steady}')}, errors ${count('error_count')}, dropped ${count('dropped_iterations')}`
  );
}
