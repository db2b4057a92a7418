/** report.html: the same content as report.md with every chart inline, readable without other files. */
import { escapeXml } from './charts.js';
import { modelLines } from './model.js';
import { PAGE_STYLE } from './page-style.js';
import { recommendations } from './recommendation.js';
import { type ReportInput, settingsLines, workloadsOf } from './report-input.js';
import { capacityChart, goodputChart, latencyBars, latencyByLoadChart } from './result-charts.js';
import { htmlTable, layersTable, probeTable } from './tables.js';
import { describeWorkload } from './workload.js';

const STYLE = `${PAGE_STYLE}
.headline { font-weight: 600; font-size: 1.1rem; }`;

/** Links to k6's web dashboard export of each expected-rate run (files beside report.html). */
function dashboardLinks(input: ReportInput, results: ReportInput['results']): string | undefined {
  const runs = results.filter((r) => r.k6Dashboard);
  if (runs.length === 0) return undefined;
  const trials = input.info.config.trials > 1;
  const items = runs.map((r) => {
    const label = `${r.granularity}${trials ? `, trial ${r.trial}` : ''}`;
    return `<li><a href="${escapeXml(encodeURI(r.k6Dashboard!))}">${escapeXml(label)}</a></li>`;
  });
  return `<h3>k6 web dashboard of each expected-rate run</h3><ul>${items.join('')}</ul>`;
}

export function renderHtml(input: ReportInput): string {
  const { perWorkload, note } = recommendations(input);
  const body: string[] = [];
  body.push('<h1>Lock granularity load test</h1>');
  body.push(
    `<ul>${settingsLines(input.info)
      .map((line) => `<li>${escapeXml(line.replace(/^- /, '').replace(/`/g, ''))}</li>`)
      .join('')}</ul>`,
  );
  body.push('<h2>Recommendation</h2>');
  for (const rec of perWorkload) {
    body.push(`<p class="headline">${escapeXml(`${perWorkload.length > 1 ? `${rec.workload}: ` : ''}${rec.headline}.`)}</p>`);
    body.push(`<ul>${rec.reasons.map((reason) => `<li>${escapeXml(reason)}</li>`).join('')}</ul>`);
  }
  if (note) body.push(`<p>${escapeXml(note)}</p>`);
  for (const { workload, results } of workloadsOf(input)) {
    body.push(`<h2>Workload "${escapeXml(workload.name)}"</h2>`);
    body.push(`<p>${escapeXml(describeWorkload(workload))}</p>`);
    body.push(htmlTable(results));
    const capacity = capacityChart(workload, results);
    if (capacity) body.push(`<div class="chart">${capacity}</div>`);
    body.push(`<div class="chart">${goodputChart(workload, results)}</div>`);
    body.push(`<div class="chart">${latencyBars(workload, results)}</div>`);
    const byLoad = latencyByLoadChart(workload, results);
    if (byLoad) body.push(`<div class="chart">${byLoad}</div>`);
    const layers = layersTable(results);
    if (layers) body.push(`<h3>Two layers: the engine alone against the functions through HTTP</h3><pre>${escapeXml(layers)}</pre>`);
    const model = modelLines(input.info, results);
    if (model.length) body.push(`<h3>A model for your deployment</h3><pre>${escapeXml(model.join('\n'))}</pre>`);
    const probes = probeTable(results);
    if (probes) body.push(`<details><summary>Capacity probes</summary><pre>${escapeXml(probes)}</pre></details>`);
    const dashboards = dashboardLinks(input, results);
    if (dashboards) body.push(dashboards);
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lock granularity load test ${escapeXml(input.info.runId)}</title>
<style>
${STYLE}
</style></head>
<body>
${body.join('\n')}
</body></html>
`;
}
