/**
 * Capacity: the highest offered rate a granularity sustains, found by probing rather than read off a
 * fixed ladder. A probe offers one constant rate for a few seconds and is judged by the service
 * level objective (goodput at least 95% of offered, acquire p99 within the SLO, under 1% errors).
 * The search ramps up coarsely (doubling) until a probe fails, then bisects between the last good
 * and the first bad rate until they are within `resolution` of each other. Later trials start from
 * an earlier trial's bracket and check both ends before narrowing it, so each trial still measures
 * its own answer. Pure: the probe is a function, so the search is tested without k6.
 *
 * One probe's p99 is about its second-worst sample, so a single stall (a garbage collection, a
 * flush) can put it just over the objective at a rate the service sustains: the document granularity
 * once "missed" 40 ops/s that way and then met 80 and 100. A marginal miss (only the p99, by less
 * than MARGINAL_P99_FACTOR times the objective) is therefore probed once more at the same rate, and
 * the rate counts as missed only when that probe misses too. An overloaded rate misses on goodput
 * or by a wide p99 margin and is not probed again.
 *
 * The objective and the verdict on one probe are the kit's shared definition (shared/objective.ts),
 * which the k6 script's thresholds come from too.
 */
import type { ProbeVerdict } from '../shared/objective.js';

export interface SearchSettings {
  /** First rate of the coarse ramp, ops/s. */
  startRate: number;
  /** The coarse ramp stops here: a granularity that sustains it is reported as "at least" this. */
  maxRate: number;
  /** Lowest rate worth probing; below it the capacity is reported as 0. */
  minRate: number;
  /** Stop bisecting when (bad - good) / good is at most this. */
  resolution: number;
  /** Hard cap on probes per search, second probes included (a run must end). */
  maxProbes: number;
  /**
   * The cap for a search that starts from an earlier bracket (later trials): it confirms or moves an
   * answer already found. Trials on this machine differ by up to ±25%, so bisecting a moved bracket
   * to 5% would cost a first search's probes again and push a default run past ten minutes.
   */
  maxProbesFromBracket: number;
  /** Probe a marginal miss once more before counting the rate as missed. */
  confirmMarginalMisses: boolean;
}

export const DEFAULT_SEARCH: Readonly<SearchSettings> = Object.freeze({
  startRate: 40,
  maxRate: 1280,
  minRate: 2,
  resolution: 0.05,
  maxProbes: 10,
  maxProbesFromBracket: 6,
  confirmMarginalMisses: true,
});

export interface Bracket {
  good: number;
  bad: number | null;
}

export interface CapacityResult {
  /** Highest rate that met the objective (0 when none did). */
  capacity: number;
  /** Lowest rate above it that failed; null when even maxRate was sustained. */
  failedAt: number | null;
  /** Every probe, in the order run. */
  probes: ProbeVerdict[];
  /** The search ended on maxProbes before reaching the resolution. */
  truncated: boolean;
}

/** Rates are whole operations per second (k6's arrival rate per 1 s time unit). */
const whole = (rate: number): number => Math.max(1, Math.round(rate));

export async function searchCapacity(
  probe: (rate: number) => Promise<ProbeVerdict>,
  settings: SearchSettings = DEFAULT_SEARCH,
  hint?: Bracket,
): Promise<CapacityResult> {
  const probes: ProbeVerdict[] = [];
  let good = 0;
  let bad: number | null = null;
  const run = async (rate: number): Promise<boolean> => {
    let verdict = await probe(whole(rate));
    probes.push(verdict);
    if (settings.confirmMarginalMisses && verdict.marginal && probes.length < maxProbes) {
      verdict = await probe(whole(rate));
      probes.push(verdict);
    }
    if (verdict.good) good = Math.max(good, verdict.rate);
    else bad = bad === null ? verdict.rate : Math.min(bad, verdict.rate);
    return verdict.good;
  };
  const fromBracket = hint !== undefined && hint.good >= settings.minRate;
  const maxProbes = fromBracket ? Math.min(settings.maxProbes, settings.maxProbesFromBracket) : settings.maxProbes;
  const budgetLeft = (): boolean => probes.length < maxProbes;

  // Find a good rate and a bad one above it.
  if (fromBracket) {
    if (await run(hint.good)) {
      if (hint.bad !== null && budgetLeft()) await run(hint.bad);
    }
  } else {
    await run(settings.startRate);
  }
  // Down by halves while nothing was good.
  let finished = false;
  while (good === 0 && bad !== null && !finished && budgetLeft()) {
    const lower = whole((bad as number) / 2);
    if (lower < settings.minRate || lower === bad) finished = true;
    else await run(lower);
  }
  // Up by doubling while nothing failed.
  while (good > 0 && bad === null && !finished && budgetLeft()) {
    if (good >= settings.maxRate) finished = true;
    else await run(Math.min(settings.maxRate, good * 2));
  }
  // Bisect.
  while (good > 0 && bad !== null && !finished && budgetLeft()) {
    const gap = (bad as number) - good;
    if (gap / good <= settings.resolution || gap <= 1) finished = true;
    else await run(good + gap / 2);
  }
  if (!finished && good > 0 && bad !== null) finished = ((bad as number) - good) / good <= settings.resolution || (bad as number) - good <= 1;
  if (!finished && good >= settings.maxRate) finished = true;
  return { capacity: good, failedAt: bad, probes, truncated: !finished };
}
