/** The run loop: every strategy on every workload, in order, until done, interrupted or the service is gone. */

import { phase } from './log.js';
import { type RunContext, runStrategy, warmFunctions } from './strategy-run.js';
import type { StrategyResult } from './summary.js';

export interface RunOutcome {
  results: StrategyResult[];
  notes: string[];
  failures: number;
}

export async function runAll(ctx: RunContext): Promise<RunOutcome> {
  const { config, interrupt } = ctx;
  const { steady, ramp } = config.schedule;
  const plan = config.workloads.flatMap((workload) => config.strategies.map((strategy) => ({ workload, strategy })));
  const outcome: RunOutcome = { results: [], notes: [], failures: 0 };
  for (const [index, { workload, strategy }] of plan.entries()) {
    if (interrupt.interrupted) break;
    phase(
      `[${index + 1}/${plan.length}] ${strategy} on workload ${workload.name}: steady ${steady.rate} ops/s for ${steady.durationS} s` +
        (ramp.levels.length ? `, ramp ${ramp.levels.join('/')} ops/s` : ''),
    );
    await warmFunctions(ctx);
    if (interrupt.interrupted) break;
    const step = await runStrategy(ctx, workload, strategy);
    if (step.result) outcome.results.push(step.result);
    outcome.notes.push(...step.notes);
    outcome.failures += step.failures;
    if (step.stop) break;
  }
  if (interrupt.interrupted) {
    outcome.notes.push('interrupted before all runs finished; numbers cover the completed runs only');
    outcome.failures++;
  }
  return outcome;
}
