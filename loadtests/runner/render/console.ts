/** What a run prints at the end: the table per workload and the recommendation. */
import { recommendations } from './recommendation.js';
import { type ReportInput, workloadsOf } from './report-input.js';
import { layersTable, textTable } from './tables.js';
import { describeWorkload } from './workload.js';

export function consoleReport(input: ReportInput): string {
  const { perWorkload, note } = recommendations(input);
  const lines: string[] = [];
  for (const { workload, results } of workloadsOf(input)) {
    lines.push(`workload ${workload.name}: ${describeWorkload(workload)}`, textTable(results), '');
    const layers = layersTable(results);
    if (layers) lines.push('the engine alone against the functions through HTTP:', layers, '');
  }
  for (const rec of perWorkload) {
    lines.push(`recommendation${perWorkload.length > 1 ? ` (${rec.workload})` : ''}: ${rec.headline}.`);
    for (const reason of rec.reasons) lines.push(`  - ${reason}`);
  }
  if (note) lines.push(note);
  return lines.join('\n');
}
