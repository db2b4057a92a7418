/** Writes a run's report files: report.md, report.html, and goodput/latency SVGs per workload (the first without a suffix). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderHtml } from './html.js';
import { renderMarkdown } from './markdown.js';
import { type ReportInput, workloadsOf } from './report-input.js';
import { capacityChart, goodputChart, latencyBars } from './result-charts.js';

export function writeReports(outDir: string, input: ReportInput): void {
  workloadsOf(input).forEach(({ workload, results }, i) => {
    const suffix = i === 0 ? '' : `-${workload.name}`;
    writeFileSync(join(outDir, `goodput${suffix}.svg`), `${goodputChart(workload, results)}\n`);
    writeFileSync(join(outDir, `latency${suffix}.svg`), `${latencyBars(workload, results)}\n`);
    const capacity = capacityChart(workload, results);
    if (capacity) writeFileSync(join(outDir, `capacity${suffix}.svg`), `${capacity}\n`);
  });
  writeFileSync(join(outDir, 'report.md'), renderMarkdown(input, { goodput: 'goodput.svg', capacity: 'capacity.svg' }));
  writeFileSync(join(outDir, 'report.html'), renderHtml(input));
}
