/** The recommendation in words: a headline and the measured reasons behind the ranking's decision. */
import type { Granularity, WorkloadConfig } from '../../shared/workload.js';
import { capacityBounds, type Decision, type Ranking, rank } from '../ranking.js';
import type { GranularityResult } from '../summary.js';
import { type GranularityTrials, overlaps, type Spread } from '../trials.js';
import { ratio, round } from './format.js';
import { type ReportInput, workloadsOf } from './report-input.js';
import { mixPercentages } from './workload.js';

export interface Recommendation {
  workload: string;
  winner: Granularity | null;
  headline: string;
  reasons: string[];
}

/** "163 ops/s (157-170 over 3 trials)", or the single value for one trial. */
export function spreadText(spread: Spread, unit: string, digits = 0): string {
  const value = (v: number) => round(v, digits);
  if (spread.values.length <= 1 || spread.min === spread.max) return `${value(spread.median)} ${unit}`;
  return `${value(spread.median)} ${unit} (${value(spread.min)}-${value(spread.max)} over ${spread.values.length} trials)`;
}

/** Picks a granularity for one workload from measured numbers only, and says why. */
export function recommend(workload: WorkloadConfig, results: GranularityResult[], expectedRate: number): Recommendation {
  const ranking = rank(results);
  const { decision } = ranking;
  const reasons = [
    ...ranking.unsafe.map((t) => `${t.granularity} is excluded: the safety checker found ${t.violations} violation(s).`),
    ...ranking.phantoms.map(
      (t) =>
        `${t.granularity} is unsafe for this workload: ${t.phantoms} operation(s) ran under a directory while another holder was renaming it ` +
        '(a file created or changed there that the locks did not cover), so it is not ranked however fast it is.',
    ),
    ...ranking.failing.map((t) => `${t.granularity} is excluded: ${round(t.errorRate.median * 100, 2)}% of its operations failed with errors.`),
  ];
  const because = (t: GranularityTrials): string => reasonLine(t, expectedRate);
  const noise = ranking.trials <= 1 ? ' (one trial, so no error bars: --trials 3 shows the noise)' : '';
  switch (decision.kind) {
    case 'none':
      return { workload: workload.name, winner: null, headline: 'no recommendation: no granularity ran cleanly', reasons };
    case 'tie':
      return {
        workload: workload.name,
        winner: null,
        headline: tieHeadline(ranking, decision.field, expectedRate) + noise,
        reasons: [...reasons, ...ranking.ranked.map(because)],
      };
    case 'winner': {
      const { winner } = decision;
      const order = [winner, ...ranking.ranked.filter((t) => t !== winner)];
      // A faster granularity that is unsafe for the workload is named, so nobody picks it for speed.
      const fasterButUnsafe = ranking.phantoms.filter((t) => t.capacity.median > winner.capacity.median);
      const caveat = fasterButUnsafe.length
        ? `; ${fasterButUnsafe.map((t) => `${t.granularity} is faster (${round(t.capacity.median, 0)} ops/s) but unsafe for this workload`).join(', ')}`
        : '';
      return {
        workload: workload.name,
        winner: winner.granularity,
        headline: winnerHeadline(decision, expectedRate, results.length) + caveat + noise,
        reasons: [...reasons, ...order.map(because)],
      };
    }
  }
}

const rangeText = (bounds: Spread): string => (bounds.min === bounds.max ? `${round(bounds.min, 0)}` : `${round(bounds.min, 0)}-${round(bounds.max, 0)}`);

function tieHeadline(ranking: Ranking, field: GranularityTrials[], expectedRate: number): string {
  const behind = ranking.ranked.filter((t) => !field.includes(t));
  const trials = ranking.trials;
  return (
    `tie within noise between ${field.map((t) => t.granularity).join(' and ')}: their capacities overlap ` +
    `(${field.map((t) => `${t.granularity} ${rangeText(capacityBounds(t))} ops/s`).join(', ')}) and so does acquire p95 at ${expectedRate} ops/s` +
    (behind.length ? ` (${behind.map((t) => t.granularity).join(', ')} behind)` : '') +
    `; more trials (--trials ${Math.max(3, trials + 2)}), longer probes (--probe-seconds) or a workload with more contention would separate them, ` +
    'or pick either'
  );
}

function winnerHeadline(decision: Extract<Decision, { kind: 'winner' }>, expectedRate: number, measured: number): string {
  const { winner, closest } = decision;
  if (!closest) return `${winner.granularity}: ${measured === 1 ? 'the only granularity measured' : 'the only granularity that ran cleanly'}`;
  if (decision.basis === 'capacity') {
    return (
      `${winner.granularity}: sustains ${spreadText(winner.capacity, 'ops/s')} against ${closest.granularity}'s ${spreadText(closest.capacity, 'ops/s')}, ` +
      `${ratio(winner.capacity.median, closest.capacity.median)} its capacity, and the ranges do not overlap`
    );
  }
  return (
    `${winner.granularity}: capacity within noise of ${closest.granularity}'s (${rangeText(capacityBounds(winner))} vs ${rangeText(capacityBounds(closest))} ops/s), ` +
    `but a lower acquire p95 at ${expectedRate} ops/s: ${spreadText(winner.acquireP95, 'ms')} vs ${spreadText(closest.acquireP95, 'ms')}`
  );
}

function reasonLine(t: GranularityTrials, expectedRate: number): string {
  const headroom = t.capacity.median - expectedRate;
  const failed = t.failedAt.filter((rate): rate is number => rate !== null);
  const truncated = t.trials.some((r) => r.capacity?.truncated);
  return (
    `${t.granularity}: capacity ${spreadText(t.capacity, 'ops/s')}` +
    (failed.length
      ? `, missed the objective at ${[...new Set(failed)].join('/')} ops/s`
      : truncated
        ? ' or more (the search stopped at its probe limit before a rate missed)'
        : ', never missed up to the search maximum') +
    `; at ${expectedRate} ops/s: goodput ${round(t.goodputRate.median)} ops/s, acquire p50/p95/p99 ` +
    `${round(t.acquireP50.median)}/${round(t.acquireP95.median)}/${round(t.acquireP99.median)} ms, ` +
    `${round(t.conflictRate.median * 100)}% of acquire requests conflicted; ` +
    (headroom >= 0
      ? `leaves ${round(headroom, 0)} ops/s of headroom (${ratio(t.capacity.median, expectedRate)} the expected rate).`
      : `falls ${round(-headroom, 0)} ops/s short of the expected rate.`)
  );
}

/**
 * Where the answer flips, from the runs actually made: workloads that differ in their share of
 * directory renames, ordered by it; wherever the capacity ratio of two granularities crosses 1
 * between two measured shares, the crossing is interpolated (on the log of the ratio). Only
 * granularities eligible in every workload are compared; a crossing whose ends are within noise is
 * flagged as such.
 */
export function flipPoints(entries: Array<{ workload: WorkloadConfig; results: GranularityResult[] }>): string[] {
  if (entries.length < 2) return [];
  const points = entries
    .map(({ workload, results }) => ({ rename: mixPercentages(workload.mix).rename, ranking: rank(results) }))
    .sort((a, b) => a.rename - b.rename);
  if (new Set(points.map((p) => p.rename)).size < points.length) return [];
  const granularities = [...new Set(points.flatMap((p) => p.ranking.eligible.map((t) => t.granularity)))].filter((granularity) =>
    points.every((p) => p.ranking.eligible.some((t) => t.granularity === granularity && t.capacity.median > 0)),
  );
  const flips: string[] = [];
  for (let i = 0; i < granularities.length; i++) {
    for (let j = i + 1; j < granularities.length; j++) {
      const [a, b] = [granularities[i]!, granularities[j]!];
      const at = (p: (typeof points)[number], granularity: Granularity) => p.ranking.eligible.find((t) => t.granularity === granularity)!;
      for (let k = 0; k + 1 < points.length; k++) {
        const [lo, hi] = [points[k]!, points[k + 1]!];
        const before = Math.log(at(lo, a).capacity.median / at(lo, b).capacity.median);
        const after = Math.log(at(hi, a).capacity.median / at(hi, b).capacity.median);
        if (before === 0 || after === 0 || Math.sign(before) === Math.sign(after)) continue;
        const crossing = lo.rename + ((hi.rename - lo.rename) * before) / (before - after);
        const [leader, follower] = after > 0 ? [a, b] : [b, a];
        const noisy = overlaps(capacityBounds(at(lo, a)), capacityBounds(at(lo, b))) || overlaps(capacityBounds(at(hi, a)), capacityBounds(at(hi, b)));
        flips.push(
          `${leader} overtakes ${follower} between ${lo.rename}% and ${hi.rename}% directory renames (about ${round(crossing, 0)}% by interpolating the capacity ratio)` +
            (noisy ? '; at one end the two are within noise, so the crossing is approximate' : ''),
        );
      }
    }
  }
  return flips;
}

/** When several workloads were measured: which won where, and where the answer flips (measured facts only). */
export function crossWorkloadNote(
  entries: Array<{ workload: WorkloadConfig; results: GranularityResult[] }>,
  recommendations: Recommendation[],
): string | undefined {
  if (recommendations.length < 2) return undefined;
  const winners = new Set(recommendations.map((r) => r.winner));
  const flips = flipPoints(entries);
  if (winners.size < 2 && flips.length === 0) return undefined;
  const parts = recommendations.map((rec) => {
    const workload = entries.find((entry) => entry.workload.name === rec.workload)!.workload;
    const mix = mixPercentages(workload.mix);
    return `${rec.winner ?? 'no clear winner'} on "${rec.workload}" (renames ${mix.rename}%, edits ${mix.edit}%, ${workload.criticalSectionMs} ms critical sections)`;
  });
  return [`The answer depends on the workload: ${parts.join('; ')}.`, ...flips.map((flip) => `${flip[0]!.toUpperCase()}${flip.slice(1)}.`)].join(' ');
}

/** One recommendation per workload with results, and the cross-workload note. */
export function recommendations(input: ReportInput): { perWorkload: Recommendation[]; note: string | undefined } {
  const entries = workloadsOf(input);
  const perWorkload = entries.map(({ workload, results }) => recommend(workload, results, input.info.config.schedule.steady.rate));
  return { perWorkload, note: crossWorkloadNote(entries, perWorkload) };
}
