/** The results table (markdown, fixed-width text, HTML), the probes table and the per-operation table. */
import { OP_KINDS, type OpKind } from '../../shared/workload.js';
import type { GranularityResult } from '../summary.js';
import { type GranularityTrials, groupTrials, type Spread } from '../trials.js';
import { escapeXml } from './charts.js';
import { round } from './format.js';

const TABLE_HEADER = [
  'granularity',
  'capacity ops/s (range over trials)',
  'missed at ops/s',
  'goodput at expected rate',
  'acquire p50/p95/p99 ms',
  'conflict rate',
  'gave up',
  'errors (rate)',
  'safety (holds)',
];

/** "163 (157-170)" or "163" when every trial agreed or there was one. */
function spreadCell(spread: Spread, digits = 1): string {
  if (spread.values.length <= 1 || spread.min === spread.max) return round(spread.median, digits);
  return `${round(spread.median, digits)} (${round(spread.min, digits)}-${round(spread.max, digits)})`;
}

function tableRows(results: GranularityResult[]): string[][] {
  return groupTrials(results).map((t: GranularityTrials) => {
    const failed = [...new Set(t.failedAt.map((rate) => (rate === null ? '-' : String(rate))))];
    const holds = t.trials.reduce((sum, r) => sum + (r.safety?.holds ?? 0), 0);
    const errors = t.trials.reduce((sum, r) => sum + r.errorCount, 0);
    return [
      t.granularity,
      t.trials.some((r) => r.capacity) ? spreadCell(t.capacity, 0) : '-',
      failed.join(', '),
      `${spreadCell(t.goodputRate)} / ${t.trials[0]!.steady.offeredRate}`,
      `${spreadCell(t.acquireP50)} / ${spreadCell(t.acquireP95)} / ${spreadCell(t.acquireP99)}`,
      `${round(t.conflictRate.median * 100)}%`,
      String(t.trials.reduce((sum, r) => sum + r.steady.gaveUp, 0)),
      `${errors} (${round(t.errorRate.median * 100, 2)}%)`,
      t.safe === null
        ? 'not checked'
        : !t.safe
          ? `VIOLATED (${t.violations})`
          : t.phantoms > 0
            ? `${t.phantoms} semantic conflict(s) (${holds})`
            : `ok (${holds})`,
    ];
  });
}

function markdownRows(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

export function markdownTable(results: GranularityResult[]): string {
  return markdownRows(TABLE_HEADER, tableRows(results));
}

/** Fixed-width table for the terminal. */
export function textTable(results: GranularityResult[]): string {
  const rows = [TABLE_HEADER, ...tableRows(results)];
  const widths = TABLE_HEADER.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function htmlTable(results: GranularityResult[]): string {
  const rows = tableRows(results);
  return `<table><thead><tr>${TABLE_HEADER.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((row) => `<tr>${row.map((cell) => `<td>${escapeXml(cell)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

/** Every probe of every trial: offered rate, goodput, acquire p99 and the verdict; empty when no search ran. */
export function probeTable(results: GranularityResult[]): string {
  const rows = results.flatMap((r) =>
    (r.capacity?.probes ?? []).map((p) => [
      r.granularity,
      String(r.trial),
      String(p.rate),
      round(p.goodputRate),
      round(p.acquireP99, 0),
      p.good ? 'met' : `missed: ${p.reasons.join(', ')}`,
    ]),
  );
  if (rows.length === 0) return '';
  return markdownRows(['granularity', 'trial', 'offered ops/s', 'goodput ops/s', 'acquire p99 ms', 'objective'], rows);
}

/** Steady phase per operation: goodput / gave up / acquire p95 ms. */
export function perOperationTable(results: GranularityResult[]): string {
  const cell = (r: GranularityResult, op: OpKind): string => `${r.perOp[op].goodput} / ${r.perOp[op].gaveUp} / ${round(r.perOp[op].acquireP95)}`;
  return markdownRows(
    ['granularity', 'trial', ...OP_KINDS],
    results.map((r) => [r.granularity, String(r.trial), ...OP_KINDS.map((op) => (r.perOp[op] ? cell(r, op) : '-'))]),
  );
}

/**
 * The two layers side by side: capacity through the functions (HTTP on the local stack, median over
 * trials) against the engine alone on the same lock store; empty when the engine was not measured.
 */
export function layersTable(results: GranularityResult[]): string {
  const rows = groupTrials(results)
    .map((t) => ({ t, engine: t.trials.find((r) => r.engine)?.engine }))
    .filter((row) => row.engine !== undefined)
    .map(({ t, engine }) => {
      const lock = engine!.capacity.capacity;
      const http = t.capacity.median;
      return [
        t.granularity,
        `${round(lock, 0)}${engine!.capacity.failedAt === null ? '+' : ''}`,
        round(http, 0),
        lock > 0 ? `${round((http / lock) * 100, 0)}%` : '-',
        lock > 0 ? `${round(100 - (http / lock) * 100, 0)}%` : '-',
        round(engine!.requestsPerOp, 1),
        engine!.safetyOk ? (engine!.phantomCount > 0 ? `${engine!.phantomCount} semantic conflict(s)` : 'ok') : `VIOLATED (${engine!.violationCount})`,
      ];
    });
  if (rows.length === 0) return '';
  return markdownRows(
    ['granularity', 'engine alone ops/s', 'through the functions ops/s', 'kept', 'taken by the HTTP layer', 'store requests per op', 'engine safety'],
    rows,
  );
}
