/** A workload in words, for the terminal and the reports. */
import { type Mix, mixWeights, OP_KINDS, type OpKind, type Skew, type WorkloadConfig } from '../../shared/workload.js';

export function describeSkew(skew: Skew): string {
  if (skew.kind === 'uniform') return 'uniform';
  if (skew.kind === 'zipf') return `zipf s=${skew.s}`;
  return `hot spot: ${Math.round(skew.hotFraction * 100)}% of targets get ${Math.round(skew.hotTraffic * 100)}% of traffic`;
}

export function mixPercentages(mix: Mix): Record<OpKind, number> {
  const weights = mixWeights(mix);
  const total = OP_KINDS.reduce((sum, key) => sum + weights[key], 0);
  const pct = (value: number): number => Math.round((value / total) * 1000) / 10;
  return { read: pct(weights.read), edit: pct(weights.edit), rename: pct(weights.rename), create: pct(weights.create), delete: pct(weights.delete) };
}

/** One line, e.g. "read/edit/rename 70/25/5%, 20 ms critical sections, hot spot: ..., tree depth 3 x fan-out 3 x 4 files per directory". */
export function describeWorkload(workload: WorkloadConfig): string {
  const mix = mixPercentages(workload.mix);
  const operations = workload.origin?.operations ?? `read/edit/rename/create/delete ${mix.read}/${mix.edit}/${mix.rename}/${mix.create}/${mix.delete}%`;
  const targets = workload.origin?.operations ? '' : `, ${describeSkew(workload.skew)}`;
  const tree =
    workload.origin?.tree ?? `tree depth ${workload.tree.depth} x fan-out ${workload.tree.fanout} x ${workload.tree.filesPerDir} files per directory`;
  return `${operations}, ${workload.criticalSectionMs} ms critical sections${targets}, ${tree}`;
}
