/** report.md: settings, recommendation, and per workload its tables. */

import { K6_THRESHOLDS_FAILED } from '../k6-process.js';
import { modelLines } from './model.js';
import { recommendations } from './recommendation.js';
import { type ReportInput, settingsLines, workloadsOf } from './report-input.js';
import { layersTable, markdownTable, perOperationTable, probeTable } from './tables.js';
import { describeWorkload } from './workload.js';

export function renderMarkdown(input: ReportInput, charts: { goodput: string; capacity?: string }): string {
  const { perWorkload, note } = recommendations(input);
  const lines: string[] = ['# Lock granularity load test', '', ...settingsLines(input.info), ''];
  lines.push('## Recommendation', '');
  for (const rec of perWorkload) {
    lines.push(`**${perWorkload.length > 1 ? `${rec.workload}: ` : ''}${rec.headline}.**`, '');
    for (const reason of rec.reasons) lines.push(`- ${reason}`);
    lines.push('');
  }
  if (note) lines.push(note, '');
  if (charts.capacity && input.results.some((r) => r.capacity)) lines.push(`![capacity per granularity, with the range over trials](${charts.capacity})`, '');
  lines.push(`![goodput against offered load](${charts.goodput})`, '');
  for (const { workload, results } of workloadsOf(input)) {
    lines.push(`## Workload "${workload.name}"`, '', describeWorkload(workload), '');
    lines.push(markdownTable(results), '');
    const layers = layersTable(results);
    if (layers) {
      lines.push(
        'Two layers (capacity by the same search and objective): the engine alone, called in process on the same lock store, against the functions through HTTP on the local stack:',
        '',
        layers,
        '',
      );
    }
    const model = modelLines(input.info, results);
    if (model.length) lines.push('### A model for your deployment', '', ...model);
    const probes = probeTable(results);
    if (probes) lines.push('Capacity probes (each offers one rate; the objective is in the settings above):', '', probes, '');
    lines.push('Per operation (steady phase): goodput / gave up / acquire p95 ms', '', perOperationTable(results), '');
    // k6 exits 99 when only the objective's thresholds failed: the expected rate is beyond the capacity, which the recommendation says.
    const failed = results.filter((r) => !r.thresholdsOk || (r.k6ExitCode !== 0 && r.k6ExitCode !== null && r.k6ExitCode !== K6_THRESHOLDS_FAILED));
    for (const r of failed) {
      lines.push(`- ${r.granularity}: k6 exit ${r.k6ExitCode}${r.failedThresholds.length ? `, failed thresholds: ${r.failedThresholds.join('; ')}` : ''}`);
    }
    const missed = results.filter((r) => r.missedObjective.length > 0);
    for (const r of missed) lines.push(`- ${r.granularity}: missed the objective at the expected rate (k6 thresholds ${r.missedObjective.join('; ')})`);
    if (failed.length || missed.length) lines.push('');
  }
  lines.push(
    'Files: `summary-<workload>-<granularity>[-t<trial>].json` (k6 summaries of the expected rate), `safety-...json`, `holds-...log`, `k6-...log` (what k6 printed: its end-of-test summary, threshold and warning lines), `k6-dashboard-<workload>-<granularity>[-t<trial>].html` (the k6 web dashboard of each expected-rate run, linked from report.html), `probes/` (the same for every capacity probe), `capacity.svg`, `goodput.svg`, `latency.svg`, `report.html`.',
    '',
  );
  return lines.join('\n');
}
