/** The results table (markdown, fixed-width text, HTML), the ramp table and the per-operation table. */
import type { StrategyResult } from '../summary.js';
import { escapeXml } from './charts.js';
import { round, saturationCell } from './format.js';

const TABLE_HEADER = [
  'strategy',
  'goodput ops/s (of offered)',
  'acquire p50/p95/p99 ms',
  'conflict rate',
  'retries',
  'gave up',
  'dropped (steady/all)',
  'errors (rate)',
  'saturation ops/s',
  'safety (holds)',
];

function tableRows(results: StrategyResult[]): string[][] {
  return results.map((r) => [
    r.strategy,
    `${round(r.steady.goodputRate)} / ${r.steady.offeredRate}`,
    `${round(r.steady.acquire.p50)} / ${round(r.steady.acquire.p95)} / ${round(r.steady.acquire.p99)}`,
    `${round(r.steady.conflictRate * 100)}%`,
    String(r.steady.retries),
    String(r.steady.gaveUp),
    `${r.steady.dropped} / ${r.droppedTotal}`,
    `${r.errorCount} (${round(r.errorRate * 100, 2)}%)`,
    saturationCell(r.saturation, r.ramp.at(-1)?.offeredRate),
    r.safety ? (r.safety.ok ? `ok (${r.safety.holds})` : `VIOLATED (${r.safety.violationCount})`) : 'not checked',
  ]);
}

function markdownRows(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

export function markdownTable(results: StrategyResult[]): string {
  return markdownRows(TABLE_HEADER, tableRows(results));
}

/** Fixed-width table for the terminal. */
export function textTable(results: StrategyResult[]): string {
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

export function htmlTable(results: StrategyResult[]): string {
  const rows = tableRows(results);
  return `<table><thead><tr>${TABLE_HEADER.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((row) => `<tr>${row.map((cell) => `<td>${escapeXml(cell)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

/** Goodput and acquire p95 per ramp level; empty when there was no ramp. */
export function rampTable(results: StrategyResult[]): string {
  const levels = results[0]?.ramp.map((s) => s.offeredRate) ?? [];
  if (levels.length === 0) return '';
  const header = ['offered ops/s', ...results.map((r) => `${r.strategy} goodput`), ...results.map((r) => `${r.strategy} acquire p95 ms`)];
  const rows = levels.map((level, i) => [
    String(level),
    ...results.map((r) => round(r.ramp[i]?.goodputRate ?? NaN)),
    ...results.map((r) => round(r.ramp[i]?.acquire.p95 ?? NaN)),
  ]);
  return markdownRows(header, rows);
}

/** Steady phase per operation: goodput / gave up / acquire p95 ms. */
export function perOperationTable(results: StrategyResult[]): string {
  const cell = (r: StrategyResult, op: 'read' | 'edit' | 'rename'): string =>
    `${r.perOp[op].goodput} / ${r.perOp[op].gaveUp} / ${round(r.perOp[op].acquireP95)}`;
  return markdownRows(
    ['strategy', 'read', 'edit', 'rename'],
    results.map((r) => [r.strategy, cell(r, 'read'), cell(r, 'edit'), cell(r, 'rename')]),
  );
}
