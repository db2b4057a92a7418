/**
 * npm run faults -- --soak: runs the faults one after the other, round and round, until the clients
 * have completed the target number of lock cycles (acquire → work → release, lost renewal or crash),
 * with a progress line every 15 s and the figures at the end. Each run is checked as it ends; the
 * soak stops after a run with a violation and keeps that run's history (it keeps no other: 100,000
 * cycles make some hundred MB of history).
 */
import type { ClusterNode } from '../infra/es/cluster.js';
import { formatSeconds } from '../tools/shared/format-seconds.js';
import type { Fault } from './catalog.js';
import { type RunResult, runFault } from './fault-run.js';
import type { Firewall } from './partition.js';
import { failsRun, kindsOf, renderTable } from './report.js';
import { sumTallies } from './wake.js';
import { emptyTally, type Workload } from './workload.js';

export interface SoakSettings {
  cycles: number;
  faults: readonly Fault[];
  durationS: number;
  clients: number;
  workload: Workload;
  dir: string;
  firewall?: Firewall;
}

/** Runs the soak; true when no run had a violation. */
export async function soak(settings: SoakSettings, nodes: readonly ClusterNode[], log: (line: string) => void): Promise<boolean> {
  const tally = emptyTally();
  const results: RunResult[] = [];
  const startedAt = Date.now();
  let current: Fault = settings.faults[0]!;
  const violations = () => results.reduce((sum, result) => sum + result.violations.length, 0);
  const progress = setInterval(() => {
    const elapsedS = (Date.now() - startedAt) / 1000;
    const rate = tally.cycles / elapsedS;
    const left = rate > 0 ? `~${formatSeconds((settings.cycles - tally.cycles) / rate)} left` : 'time left unknown yet';
    const share = Math.floor((100 * tally.cycles) / settings.cycles);
    log(
      `soak: ${tally.cycles} / ${settings.cycles} cycles (${share} %), ${violations()} violations, run ${results.length + 1} (${current}), ${formatSeconds(elapsedS)} in, ${left} at ${rate.toFixed(1)} cycles/s`,
    );
  }, 15_000);
  try {
    for (let run = 0; tally.cycles < settings.cycles; run++) {
      current = settings.faults[run % settings.faults.length]!;
      const result = await runFault(
        current,
        {
          durationS: settings.durationS,
          clients: settings.clients,
          workload: settings.workload,
          results: { dir: settings.dir, name: `soak-${String(run + 1).padStart(3, '0')}-${current}`, keep: 'violations' },
          ...(settings.firewall ? { firewall: settings.firewall } : {}),
          tally,
          enough: () => tally.cycles >= settings.cycles,
        },
        nodes,
        () => undefined,
      );
      results.push(result);
      log(
        `soak: run ${run + 1} ${current}: ${result.cycles} cycles, ${result.grants} grants, ${result.violations.length} violations${result.violations.length > 0 ? ` (${kindsOf(result.violations)}; history ${result.historyFile})` : ''}`,
      );
      if (failsRun(result)) {
        log('soak: stopping after a run with a violation');
        break;
      }
    }
  } finally {
    clearInterval(progress);
  }
  const durationS = (Date.now() - startedAt) / 1000;
  const injected = results.filter((result) => result.injected).length;
  console.log(`\nsoak: ${results.length} runs of ${settings.durationS} s, ${settings.clients} clients, ${settings.workload.granularity} locks`);
  console.log(`  cycles            ${tally.cycles}`);
  console.log(`  grants            ${tally.grants}`);
  console.log(`  conflicts         ${tally.conflicts}`);
  console.log(`  unknown outcomes  ${tally.unknown}`);
  console.log(`  faults injected   ${injected} in ${results.length} runs, cycling through ${settings.faults.join(', ')}`);
  console.log(`  duration          ${formatSeconds(durationS)}`);
  console.log(`  cycles/s          ${(tally.cycles / durationS).toFixed(1)}`);
  console.log(`  violations        ${violations()}${violations() > 0 ? ` (${kindsOf(results.flatMap((result) => result.violations))})` : ''}`);
  console.log('');
  for (const line of renderTable(aggregate(results), [])) console.log(line);
  return !results.some(failsRun);
}

/** One row per fault over all its runs: the table's figures summed, the gap the longest, the terms merged. */
function aggregate(results: readonly RunResult[]): RunResult[] {
  const byFault = new Map<Fault, RunResult[]>();
  for (const result of results) byFault.set(result.fault, [...(byFault.get(result.fault) ?? []), result]);
  return [...byFault.entries()].map(([fault, runs]) => {
    const sum = (pick: (result: RunResult) => number) => runs.reduce((total, result) => total + pick(result), 0);
    const errors: Record<string, number> = {};
    for (const run of runs) for (const [name, count] of Object.entries(run.errors)) errors[name] = (errors[name] ?? 0) + count;
    const injected = runs.filter((run) => run.injected).length;
    return {
      fault,
      what: `${runs.length} run${runs.length === 1 ? '' : 's'}, ${injected} injected`,
      injected: injected > 0,
      durationMs: sum((run) => run.durationMs),
      cycles: sum((run) => run.cycles),
      grants: sum((run) => run.grants),
      conflicts: sum((run) => run.conflicts),
      unknown: sum((run) => run.unknown),
      errors,
      violations: runs.flatMap((run) => run.violations),
      longestGapMs: Math.max(...runs.map((run) => run.longestGapMs)),
      primaryTerms: [...new Set(runs.flatMap((run) => run.primaryTerms))].sort((a, b) => a - b),
      epochs: [...new Set(runs.flatMap((run) => run.epochs))].sort((a, b) => a - b),
      wake: sumTallies(runs.flatMap((run) => (run.wake ? [run.wake] : []))),
      grantedAtOnce: sum((run) => run.grantedAtOnce ?? 0),
      clockOffsetsMs: runs[0]!.clockOffsetsMs,
      ...(runs.find((run) => run.historyFile) ? { historyFile: runs.find((run) => run.historyFile)!.historyFile! } : {}),
    };
  });
}
