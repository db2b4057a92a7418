/** The fault runner's table: one row per fault run, its errors by type and its first violations. */
import { EXPECTED_TO_BREAK, type Fault } from './catalog.js';
import { countByKind } from './checker.js';
import type { RunResult } from './fault-run.js';
import type { Violation } from './history.js';
import { everyWaiterEnded, type WakeTally } from './wake.js';
import type { WorkTally } from './work-once.js';

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

/** Whether a run fails the runner: its violations (not for a run meant to break an assumption), or its channel waiters'. */
export const failsRun = (result: RunResult): boolean =>
  (result.violations.length > 0 && !EXPECTED_TO_BREAK.includes(result.fault)) ||
  // The wake protocol broken (a grant without a claim, a message for another call), or a waiter left hanging.
  (result.grantedAtOnce ?? 0) > 0 ||
  (result.wake !== undefined && (result.wake.mismatched > 0 || !everyWaiterEnded(result.wake)));

/**
 * What the channel waiters were told and how their calls ended; the last words say whether every one
 * ended told (ready then its claim, or failed) or on its own channel's timeout (or gone), as it must.
 */
export function wakeLines(tally: WakeTally, grantedAtOnce = 0): string[] {
  const { waiters, notQueued, woken, claimed, claimFailed, toldFailed, timedOut, gaveUp, duplicates, late, mismatched, untold, injected } = tally;
  const ended = everyWaiterEnded(tally) ? 'every waiter ended told or on its own timeout' : `${untold} waiters never ended: a bug of the runner`;
  const anomalies = [
    ...(grantedAtOnce > 0 ? [`${grantedAtOnce} acquires with wake granted at once (must answer queued)`] : []),
    ...(mismatched > 0 ? [`${mismatched} ready messages naming another call`] : []),
  ];
  return [
    `    channel waiters ${waiters} (${notQueued} more not queued): woken ${woken} (claimed ${claimed}, claim failed ${claimFailed}), told failed ${toldFailed}, timed out on their own channel ${timedOut}, gone ${gaveUp}; ${ended}`,
    `    wake messages: duplicates received ${duplicates}, late (after the waiter stopped) ${late}; injected: thrown ${injected.thrown}, duplicated ${injected.duplicated}, lost ${injected.lost}, gone ${injected.gone}${anomalies.length > 0 ? `; ENGINE: ${anomalies.join(', ')}` : ''}`,
  ];
}

/** What the work clients and the operator of a work-revoke run did. */
export function workLine(work: WorkTally): string {
  const { messages, deliveries, runs, completed, failed, refused, answered, inProgress, crashed, revokes, revokedHolders, recordStalls, claimStalls } = work;
  return (
    `    work: ${messages} messages, ${deliveries} deliveries, ${runs} runs, recorded completed ${completed}, failed ${failed}, refused ${refused}; ` +
    `answered with a record ${answered}, in progress ${inProgress}, crashed ${crashed}; revokes ${revokes} (${revokedHolders} holders taken); ` +
    `stalled: record writes ${recordStalls}, claim answers ${claimStalls}`
  );
}

export function renderTable(results: readonly RunResult[], skipped: readonly Skipped[]): string[] {
  const header = ['fault', 'what happened', 'cycles', 'grants', 'longest gap', 'primary terms', 'epochs', 'violations'];
  const rows = results.map((result) => [
    result.fault,
    result.what,
    String(result.cycles),
    String(result.grants),
    `${(result.longestGapMs / 1000).toFixed(1)} s`,
    result.primaryTerms.join(', '),
    result.epochs.join(', '),
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
    if (result.work) out.push(workLine(result.work));
    else if (result.wake) out.push(...wakeLines(result.wake, result.grantedAtOnce ?? 0));
    if (result.clockOffsetsMs.some((offset) => offset !== 0)) out.push(`    client clocks (ms): ${result.clockOffsetsMs.join(', ')}`);
    for (const violation of result.violations.slice(0, 10)) out.push(`    ${violation.kind}: ${violation.message}`);
    if (result.violations.length > 10) out.push(`    ... ${result.violations.length - 10} more in ${result.historyFile}`);
    else if (result.violations.length > 0) out.push(`    history: ${result.historyFile}`);
  }
  for (const { fault, reason } of skipped) out.push(`${fault.padEnd(widths[0]!)}  skipped: ${reason}`);
  return out;
}
