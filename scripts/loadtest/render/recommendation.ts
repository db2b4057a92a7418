/** The recommendation in words: a headline and the measured reasons behind the ranking's decision. */
import type { Strategy, WorkloadConfig } from '../../../loadtests/lib/workload.js';
import { type Decision, type Ranking, rank } from '../ranking.js';
import type { StrategyResult } from '../summary.js';
import { describeSaturation, ratio, round } from './format.js';
import { type ReportInput, workloadsOf } from './report-input.js';
import { mixPercentages } from './workload.js';

export interface Recommendation {
  workload: string;
  winner: Strategy | null;
  headline: string;
  reasons: string[];
}

/** Picks a strategy for one workload from measured numbers only, and says why. */
export function recommend(workload: WorkloadConfig, results: StrategyResult[]): Recommendation {
  const ranking = rank(results);
  const { decision } = ranking;
  const reasons = [
    ...ranking.unsafe.map((r) => `${r.strategy} is excluded: the safety checker found ${r.safety!.violationCount} violation(s).`),
    ...ranking.failing.map((r) => `${r.strategy} is excluded: ${round(r.errorRate * 100, 2)}% of its operations failed with errors.`),
  ];
  const because = (r: StrategyResult): string => reasonLine(r, ranking.offered);
  switch (decision.kind) {
    case 'none':
      return { workload: workload.name, winner: null, headline: 'no recommendation: no strategy ran cleanly', reasons };
    case 'tie':
      return { workload: workload.name, winner: null, headline: tieHeadline(ranking, decision.field), reasons: [...reasons, ...ranking.eligible.map(because)] };
    case 'winner': {
      const { winner } = decision;
      const order = [winner, ...ranking.eligible.filter((r) => r !== winner)];
      return {
        workload: workload.name,
        winner: winner.strategy,
        headline: winnerHeadline(ranking, decision, results.length),
        reasons: [...reasons, ...order.map(because)],
      };
    }
  }
}

function tieHeadline(ranking: Ranking, field: StrategyResult[]): string {
  const behind = ranking.ranked.filter((r) => !field.includes(r));
  return (
    `no clear winner at ${ranking.offered} ops/s offered: ${field.map((r) => r.strategy).join(', ')} are within a few percent on goodput` +
    `${field.every((r) => r.saturation.measured) ? ', ramp peak' : ''} and acquire p95` +
    (behind.length ? ` (${behind.map((r) => r.strategy).join(', ')} behind)` : '') +
    '; more load or more contention would separate them'
  );
}

function winnerHeadline(ranking: Ranking, decision: Extract<Decision, { kind: 'winner' }>, measured: number): string {
  const { winner } = decision;
  const { ranked, offered } = ranking;
  const goodput = (r: StrategyResult): number => r.steady.goodputRate;
  if (decision.basis === 'goodput') {
    const runnerUp = ranked.find((r) => r !== winner);
    const worst = ranked[ranked.length - 1]!;
    if (!runnerUp) return `${winner.strategy}: ${measured === 1 ? 'the only strategy measured' : 'the only strategy that ran cleanly'}`;
    return (
      `${winner.strategy}: ${ratio(goodput(winner), goodput(worst))} the goodput of ${worst.strategy}` +
      (runnerUp !== worst ? ` and ${ratio(goodput(winner), goodput(runnerUp))} that of ${runnerUp.strategy}` : '') +
      ` at ${offered} ops/s offered`
    );
  }
  const tiedWith = ranking.tiedOnGoodput
    .filter((r) => r !== winner)
    .map((r) => r.strategy)
    .join(' and ');
  const worst = ranked.filter((r) => !ranking.tiedOnGoodput.includes(r)).at(-1);
  const tie =
    `${winner.strategy}: ties ${tiedWith} on goodput at ${offered} ops/s offered` +
    (worst ? ` (${ratio(goodput(winner), goodput(worst))} ${worst.strategy}'s)` : '');
  const next = decision.closest;
  if (decision.basis === 'peak') {
    const peak = (r: StrategyResult): number => r.saturation.peakGoodputRate;
    return `${tie}, and reaches ${ratio(peak(winner), peak(next))} ${next.strategy}'s peak goodput under the ramp (${round(peak(winner))} vs ${round(peak(next))} ops/s)`;
  }
  return `${tie}, with the lowest acquire p95 (${round(winner.steady.acquire.p95)} ms vs ${round(next.steady.acquire.p95)} ms for ${next.strategy})`;
}

function reasonLine(r: StrategyResult, offered: number): string {
  return (
    `${r.strategy}: ${round(r.steady.goodputRate)} ops/s goodput of ${offered} offered, acquire p50/p95/p99 ` +
    `${round(r.steady.acquire.p50)}/${round(r.steady.acquire.p95)}/${round(r.steady.acquire.p99)} ms, ` +
    `${round(r.steady.conflictRate * 100)}% of acquire requests conflicted, ${r.steady.gaveUp} gave up; ` +
    `saturation ${describeSaturation(r.saturation, r.ramp.at(-1)?.offeredRate)}.`
  );
}

/** When several workloads were measured and their winners differ, say which won where (measured facts only). */
export function crossWorkloadNote(workloads: WorkloadConfig[], recommendations: Recommendation[]): string | undefined {
  const winners = new Set(recommendations.map((r) => r.winner).filter(Boolean));
  if (recommendations.length < 2 || winners.size < 2) return undefined;
  const parts = recommendations.map((rec) => {
    const workload = workloads.find((w) => w.name === rec.workload)!;
    const mix = mixPercentages(workload.mix);
    return `${rec.winner ?? 'none'} won "${rec.workload}" (renames ${mix.rename}%, edits ${mix.edit}%, ${workload.criticalSectionMs} ms critical sections)`;
  });
  return `The winner depends on the workload: ${parts.join('; ')}.`;
}

/** One recommendation per workload with results, and the cross-workload note. */
export function recommendations(input: ReportInput): { perWorkload: Recommendation[]; note: string | undefined } {
  const perWorkload = workloadsOf(input).map(({ workload, results }) => recommend(workload, results));
  return { perWorkload, note: crossWorkloadNote(input.info.config.workloads, perWorkload) };
}
