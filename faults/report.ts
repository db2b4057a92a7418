/** The fault runner's table: one row per fault run, its errors by type and its first violations. */
import { EXPECTED_TO_BREAK, type Fault } from './catalog.js';
import { countByKind } from './checker.js';
import type { RunResult } from './fault-run.js';
import type { Violation } from './history.js';

export interface Skipped {
  fault: Fault;
  reason: string;
}

/** "overlap 12, lost-grant 1" */
export const kindsOf = (violations: readonly Violation[]): string =>
  Object.entries(countByKind(violations))
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');

function violationCell(result: RunResult): string {
  if (EXPECTED_TO_BREAK.includes(result.fault))
    return `expected: beyond the assumption (${result.violations.length > 0 ? kindsOf(result.violations) : 'none seen'})`;
  return result.violations.length === 0 ? '0' : `${result.violations.length} (${kindsOf(result.violations)})`;
}

/** Whether a run's violations fail the runner: not for a run meant to break an assumption. */
export const failsRun = (result: RunResult): boolean => result.violations.length > 0 && !EXPECTED_TO_BREAK.includes(result.fault);

export function renderTable(results: readonly RunResult[], skipped: readonly Skipped[]): string[] {
  const header = ['fault', 'what happened', 'cycles', 'grants', 'longest gap', 'primary terms', 'violations'];
  const rows = results.map((result) => [
    result.fault,
    result.what,
    String(result.cycles),
    String(result.grants),
    `${(result.longestGapMs / 1000).toFixed(1)} s`,
    result.primaryTerms.join(', '),
    violationCell(result),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, column) => (column >= 2 && column <= 3 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  const out = [line(header)];
  for (const [position, result] of results.entries()) {
    out.push(line(rows[position]!));
    const errors = Object.entries(result.errors)
      .sort((a, b) => b[1] - a[1])
      .map(([name, count]) => `${name} ${count}`)
      .join(', ');
    out.push(`    conflicts ${result.conflicts}, unknown outcomes ${result.unknown}; errors: ${errors || 'none'}`);
    if (result.wake) {
      const { waiters, toldGranted, toldFailed, toldTwice, untold } = result.wake;
      out.push(`    channel waiters ${waiters}: told granted ${toldGranted} (twice ${toldTwice}), told failed ${toldFailed}, queued and never told ${untold}`);
    }
    if (result.clockOffsetsMs.some((offset) => offset !== 0)) out.push(`    client clocks (ms): ${result.clockOffsetsMs.join(', ')}`);
    for (const violation of result.violations.slice(0, 10)) out.push(`    ${violation.kind}: ${violation.message}`);
    if (result.violations.length > 10) out.push(`    ... ${result.violations.length - 10} more in ${result.historyFile}`);
    else if (result.violations.length > 0) out.push(`    history: ${result.historyFile}`);
  }
  for (const { fault, reason } of skipped) out.push(`${fault.padEnd(widths[0]!)}  skipped: ${reason}`);
  return out;
}
