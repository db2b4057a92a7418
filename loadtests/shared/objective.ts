/**
 * The service level objective, defined once for both sides of the kit: how the orchestrator judges a
 * capacity probe (`judge`, in Node) and the k6 thresholds every run carries (`objectiveThresholds`,
 * in the k6 script), so a k6 run started by hand fails the way the kit judges it.
 *
 *   goodput   at least `goodputRatio` of the operations the steady scenario offers complete
 *             (acquired, held, released), whether k6 started them or dropped them for want of a VU;
 *   latency   acquire p99 (first attempt until granted, retries included) at most `p99Ms`;
 *   errors    under `errorRate` of the operations end in an error (giving up after conflicts is not one).
 *
 * k6 has no metric for "completed out of offered": a Rate only sees iterations that started, and the
 * arrivals it drops (dropped_iterations) never start. So the goodput threshold is a count on the
 * `goodput` counter of the steady stage, at least `goodputRatio` times the operations the scenario
 * plans (rate x seconds, or a replayed trace's length): the same test as the judge's
 * goodput/seconds >= goodputRatio x rate.
 *
 * Plain TypeScript with no imports: k6 and Node load it alike.
 */

export interface Objective {
  /** Goodput must reach this share of the offered rate. */
  goodputRatio: number;
  /** Acquire p99 must stay at or below this, ms. */
  p99Ms: number;
  /** Errors (not conflicts) must stay below this share of operations. */
  errorRate: number;
}

export const DEFAULT_OBJECTIVE: Readonly<Objective> = Object.freeze({ goodputRatio: 0.95, p99Ms: 250, errorRate: 0.01 });

export interface ProbeOutcome {
  /** Offered operations per second. */
  rate: number;
  /** Completed operations per second. */
  goodputRate: number;
  acquireP99: number;
  errorRate: number;
  /** Iterations k6 could not start (no free VU): offered load that was never sent. */
  dropped: number;
}

export interface ProbeVerdict extends ProbeOutcome {
  good: boolean;
  /** Why a probe failed, in words (empty when good). */
  reasons: string[];
  /** Missed only on the p99, and by less than MARGINAL_P99_FACTOR times the objective: worth a second probe. */
  marginal: boolean;
}

/** A p99 miss below this multiple of the objective, with goodput and errors met, is marginal. */
export const MARGINAL_P99_FACTOR = 2;

/** The orchestrator's verdict on one probe (capacity.ts searches with it). */
export function judge(outcome: ProbeOutcome, objective: Objective): ProbeVerdict {
  const reasons: string[] = [];
  if (outcome.goodputRate < objective.goodputRatio * outcome.rate) {
    reasons.push(`goodput ${outcome.goodputRate.toFixed(1)} < ${Math.round(objective.goodputRatio * 100)}% of ${outcome.rate} ops/s`);
  }
  if (outcome.acquireP99 > objective.p99Ms) reasons.push(`acquire p99 ${Math.round(outcome.acquireP99)} ms > ${objective.p99Ms} ms`);
  if (outcome.errorRate >= objective.errorRate) reasons.push(`${(outcome.errorRate * 100).toFixed(1)}% errors`);
  const onlyP99 = reasons.length === 1 && outcome.acquireP99 > objective.p99Ms;
  return { ...outcome, good: reasons.length === 0, reasons, marginal: onlyP99 && outcome.acquireP99 < MARGINAL_P99_FACTOR * objective.p99Ms };
}

/** The k6 metrics whose thresholds are the objective's alone: missing them is a missed objective, not a broken run. */
export const OBJECTIVE_METRICS: readonly string[] = ['goodput{stage:steady}', 'acquire_latency{stage:steady}'];

/** Rounded so that 0.95 x 30 reads 28.5 in the threshold, not 28.499999999999996. */
const exact = (value: number): number => Number(value.toFixed(6));

/**
 * The objective as k6 thresholds on the steady scenario, which offers `offered` operations in all.
 * `errors` is also what fails a run outright (more than 1 % of operations in error), as it always has.
 */
export function objectiveThresholds(objective: Objective, offered: number): Record<string, string[]> {
  return {
    'goodput{stage:steady}': [`count>=${exact(objective.goodputRatio * offered)}`],
    'acquire_latency{stage:steady}': [`p(99)<=${exact(objective.p99Ms)}`],
    errors: [`rate<${exact(objective.errorRate)}`],
  };
}
