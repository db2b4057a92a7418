/** The waiting comparison in words, tables and one SVG: polling against queueing on the same workload. */
import type { WaitFigures } from '../waiting/analysis.js';
import type { WaitingRun, WaitingScenario } from '../waiting/scenario.js';
import { barChart, escapeXml, lineChart } from './charts.js';
import { ratio, round } from './format.js';
import { PAGE_STYLE } from './page-style.js';

const MODE_COLORS: Record<string, string> = { polling: '#d62728', queueing: '#1f77b4' };

const ms = (value: number): string => String(Math.round(value));
const share = (part: number, whole: number): string => (whole > 0 ? `${round((100 * part) / whole)} %` : '-');

/** The scenario in one sentence. */
export function describeScenario(scenario: WaitingScenario): string {
  return (
    `${scenario.callers} callers in closed loops on ${scenario.keys} hot document lock(s), ${Math.round(scenario.readerShare * 100)} % readers (shared) / ` +
    `${Math.round((1 - scenario.readerShare) * 100)} % writers (exclusive), ${scenario.holdMs} ms critical sections, ` +
    `think time 0-${2 * scenario.thinkMs} ms, a ${scenario.budgetMs / 1000} s budget per wait, arrivals for ${scenario.seconds} s per mode; ` +
    `polling: waitMs 0 and the kit's backoff (retryAfterMs as a floor, ${scenario.retry.baseDelayMs}-${scenario.retry.maxDelayMs} ms, jittered); queueing: waitMs = the budget left`
  );
}

const HEADER = [
  'mode',
  'grants',
  'wait p50 / p99 / max ms',
  'writers p99 / max ms',
  'overtakes (grants that overtook)',
  'writers passed by later readers (longest wait ms)',
  'ES requests per grant (writes / reads)',
  'acquire requests per grant',
  'timeouts',
  'errors',
  'safety',
];

function row(run: WaitingRun): string[] {
  const f = run.figures;
  return [
    f.mode,
    String(f.grants),
    `${ms(f.wait.p50)} / ${ms(f.wait.p99)} / ${ms(f.wait.max)}`,
    `${ms(f.writerWait.p99)} / ${ms(f.writerWait.max)}`,
    `${f.overtakes} (${f.overtakingGrants}, ${share(f.overtakingGrants, f.grants)} of grants)`,
    f.writersPassedByReaders === 0 ? '0' : `${f.writersPassedByReaders} (${ms(f.writerLongestWaitPassed)})`,
    `${round(f.requestsPerGrant)} (${round(f.requestsPerGrantByKind.write)} / ${round(f.requestsPerGrantByKind.read)})`,
    round(f.acquireRequestsPerGrant),
    String(f.timeouts),
    String(f.errors),
    run.safety.ok && run.leftoverLocks === 0
      ? `ok (${run.safety.holds} holds)`
      : `${run.safety.violationCount} violation(s), ${run.leftoverLocks} lock(s) left held`,
  ];
}

export function waitingTable(runs: readonly WaitingRun[]): string {
  return [HEADER, HEADER.map(() => '---'), ...runs.map(row)].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

/** Queueing against polling, measured in the same run: "queueing / polling" per figure. */
export function waitingRatios(runs: readonly WaitingRun[]): string | undefined {
  const polling = runs.find((run) => run.figures.mode === 'polling')?.figures;
  const queueing = runs.find((run) => run.figures.mode === 'queueing')?.figures;
  if (!polling || !queueing) return undefined;
  const pair = (label: string, pick: (f: WaitFigures) => number): string => `${label} ${ratio(pick(queueing), pick(polling))}`;
  return (
    `Queueing / polling: ${[
      pair('wait p50', (f) => f.wait.p50),
      pair('p99', (f) => f.wait.p99),
      pair('max', (f) => f.wait.max),
      pair('writers p99', (f) => f.writerWait.p99),
      pair('ES requests per grant', (f) => f.requestsPerGrant),
      pair('grants', (f) => f.grants),
    ].join(', ')}; ` + `overtakes ${queueing.overtakes} against ${polling.overtakes}.`
  );
}

/** Two charts in one SVG, one above the other. */
function stack(charts: Array<{ svg: string; height: number }>, width: number): string {
  const height = charts.reduce((sum, chart) => sum + chart.height, 0);
  let y = 0;
  const parts = charts.map((chart) => {
    const placed = chart.svg.replace(/^<svg /, `<svg x="0" y="${y}" `);
    y += chart.height;
    return placed;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="Waiting: polling against queueing">`,
    ...parts,
    '</svg>',
  ].join('\n');
}

/** The wait at every percentile per mode (a CDF on its side), and the lock store requests per grant. */
export function waitingChart(runs: readonly WaitingRun[], scenario: WaitingScenario): string {
  const width = 760;
  const quantiles = lineChart({
    title: 'Wait for a grant: polling against queueing',
    subtitle: `wait (arrival to grant) at each percentile, p0-p100 (max: ${runs.map((run) => `${run.figures.mode} ${ms(run.figures.wait.max)} ms`).join(', ')}); ${scenario.callers} callers, ${scenario.keys} hot locks, ${Math.round(scenario.readerShare * 100)} % readers, ${scenario.holdMs} ms sections`,
    xLabel: 'percentile of grants',
    yLabel: 'wait, ms',
    width,
    height: 420,
    series: runs.map((run) => ({
      name: run.figures.mode,
      color: MODE_COLORS[run.figures.mode]!,
      points: run.figures.quantiles.map((y, x) => ({ x, y })).filter((point) => point.x % 5 === 0 || point.x >= 95),
    })),
  });
  const requests = barChart({
    title: 'Elasticsearch requests per grant',
    subtitle: 'every request of the run (acquire tries, queue looks, releases) divided by the grants; writes and reads',
    yLabel: 'requests per grant',
    width,
    height: 340,
    bars: ['all', 'writes', 'reads', 'acquire side'],
    groups: runs.map((run) => ({
      name: run.figures.mode,
      color: MODE_COLORS[run.figures.mode]!,
      values: [
        run.figures.requestsPerGrant,
        run.figures.requestsPerGrantByKind.write,
        run.figures.requestsPerGrantByKind.read,
        run.figures.acquireRequestsPerGrant,
      ],
      ...(run.figures.timeouts > 0 ? { warning: `${run.figures.timeouts} timed out` } : {}),
    })),
  });
  return stack(
    [
      { svg: quantiles, height: 420 },
      { svg: requests, height: 340 },
    ],
    width,
  );
}

/** waiting.md: the scenario, the table, the ratios, the chart. */
export function waitingMarkdown(runs: readonly WaitingRun[], scenario: WaitingScenario, info: { server: string; command: string; chart: string }): string {
  const ratios = waitingRatios(runs);
  return [
    '# Waiting: polling against queueing',
    '',
    `\`${info.command}\` on ${info.server}. ${describeScenario(scenario)}.`,
    '',
    waitingTable(runs),
    '',
    ...(ratios ? [ratios, ''] : []),
    `![Wait per percentile and requests per grant](${info.chart})`,
    '',
    'Wait: from the arrival (before the first acquire request) to the grant in hand. Overtakes: for each grant, the callers on the same lock with an incompatible mode that came before it and were granted after it (polling: by arrival; queueing: by the instant their ticket joined the queue). Writers passed by later readers: writers granted after a reader that came after them, and the longest wait among them. ES requests: every request the run sent to the lock store, counted from the search client.',
    '',
  ].join('\n');
}

export function waitingHtml(runs: readonly WaitingRun[], scenario: WaitingScenario, info: { server: string; command: string }): string {
  const cells = (values: string[], tag: string): string => `<tr>${values.map((value) => `<${tag}>${escapeXml(value)}</${tag}>`).join('')}</tr>`;
  const ratios = waitingRatios(runs);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Waiting: polling against queueing</title>
<style>
${PAGE_STYLE}
</style></head>
<body>
<h1>Waiting: polling against queueing</h1>
<p><code>${escapeXml(info.command)}</code> on ${escapeXml(info.server)}. ${escapeXml(describeScenario(scenario))}.</p>
<table>${cells(HEADER, 'th')}${runs.map((run) => cells(row(run), 'td')).join('')}</table>
${ratios ? `<p>${escapeXml(ratios)}</p>` : ''}
<div class="chart">${waitingChart(runs, scenario)}</div>
</body></html>
`;
}
