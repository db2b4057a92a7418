/**
 * The run loop: trials of every granularity on every workload, interleaved (trial 1 of each, then
 * trial 2 of each...) so that a machine that slows down over the run does not favour whoever ran
 * first. Each step runs the expected rate (steady), then searches for the capacity with probes.
 * Prints progress with an estimate of the time left, measured from the probes run so far.
 */

import { formatSeconds } from '../../tools/shared/format-seconds.js';
import { type Bracket, searchCapacity } from './capacity.js';
import { expectedProbes, granularitySeconds, K6_RUN_OVERHEAD_S, type LoadtestConfig, plannedEngineSearchSeconds, runsEngineSearch } from './config.js';
import { type RunContext, runGranularity, runProbe, warmFunctions } from './granularity-run.js';
import { log } from './log.js';
import { type GranularityResult, saturationOf } from './summary.js';

export interface RunOutcome {
  results: GranularityResult[];
  notes: string[];
  failures: number;
}

/** Seconds one kind of step takes: the plan's figure until one was timed, then the mean of those timed. */
class StepTime {
  private count = 0;
  private totalS = 0;
  constructor(private readonly planned: number) {}
  took(seconds: number): void {
    this.count++;
    this.totalS += seconds;
  }
  get seconds(): number {
    return this.count > 0 ? this.totalS / this.count : this.planned;
  }
}

/** The time left, from what each kind of k6 run has taken so far (the plan's figures until measured). */
class Clock {
  private readonly started = Date.now();
  readonly probe: StepTime;
  readonly steady: StepTime;
  readonly engine: StepTime;
  /** Probes per search so far, first trials and later ones apart (later ones start from a bracket). */
  private readonly searches = { first: [] as number[], later: [] as number[] };

  constructor(
    config: LoadtestConfig,
    /** The engine-only layer opened (it is skipped when it could not start). */
    private readonly engineOpen: boolean,
  ) {
    this.probe = new StepTime(config.capacity.probeS + 1 + K6_RUN_OVERHEAD_S);
    this.steady = new StepTime(granularitySeconds(config.schedule) + K6_RUN_OVERHEAD_S);
    this.engine = new StepTime(plannedEngineSearchSeconds(config));
  }

  searchTook(trial: number, probes: number): void {
    (trial === 1 ? this.searches.first : this.searches.later).push(probes);
  }

  /** Probes a search of this trial will likely need: as measured so far, else the plan's figure. */
  probesFor(config: LoadtestConfig, trial: number): number {
    if (!config.capacity.enabled) return 0;
    const seen = trial === 1 ? this.searches.first : this.searches.later;
    return seen.length > 0 ? seen.reduce((sum, n) => sum + n, 0) / seen.length : expectedProbes(config, trial);
  }

  /** This trial's step runs an engine-only search after its capacity search. */
  engineSearchIn(config: LoadtestConfig, trial: number): boolean {
    return this.engineOpen && runsEngineSearch(config, trial);
  }

  /** "~4 min 10 s left" for the steps not yet run plus what this one still has to do (its probes, its engine-only search). */
  left(stepsLeft: Array<{ trial: number }>, probesLeftNow: number, config: LoadtestConfig, engineNow: boolean): string {
    let seconds = probesLeftNow * this.probe.seconds + (engineNow ? this.engine.seconds : 0);
    for (const step of stepsLeft)
      seconds +=
        this.steady.seconds + this.probesFor(config, step.trial) * this.probe.seconds + (this.engineSearchIn(config, step.trial) ? this.engine.seconds : 0);
    return `${formatSeconds((Date.now() - this.started) / 1000)} elapsed, ~${formatSeconds(seconds)} left`;
  }
}

export async function runAll(ctx: RunContext): Promise<RunOutcome> {
  const { config, interrupt } = ctx;
  const plan = Array.from({ length: config.trials }, (_, index) => index + 1).flatMap((trial) =>
    config.workloads.flatMap((workload) => config.granularities.map((granularity) => ({ trial, workload, granularity }))),
  );
  const outcome: RunOutcome = { results: [], notes: [], failures: 0 };
  const brackets = new Map<string, Bracket>();
  const clock = new Clock(config, ctx.engine !== undefined);
  for (const [index, step] of plan.entries()) {
    if (interrupt.interrupted) break;
    const { trial, workload, granularity } = step;
    const later = plan.slice(index + 1);
    // One line per step's expected-rate run (after it): where it is in the plan, its figures, what is left.
    const where = `[${index + 1}/${plan.length}]${config.workloads.length > 1 ? ` ${workload.name}` : ''}${config.trials > 1 ? ` trial ${trial}/${config.trials}` : ''}`;
    const warm = await warmFunctions(ctx);
    if (interrupt.interrupted) break;
    const steadyStarted = Date.now();
    const run = await runGranularity(ctx, workload, granularity, trial);
    clock.steady.took((Date.now() - steadyStarted) / 1000);
    const left = clock.left(later, run.result && config.capacity.enabled ? clock.probesFor(config, trial) : 0, config, clock.engineSearchIn(config, trial));
    log(`${where} ${[...run.figures, ...(warm ? [warm] : [])].join('; ')} (${left})`);
    outcome.notes.push(...run.notes);
    outcome.failures += run.failures;
    if (run.stop || !run.result) {
      if (run.stop) break;
      continue;
    }
    const result = run.result;
    outcome.results.push(result);
    if (!config.capacity.enabled || result.safety?.ok === false) continue;

    const key = `${workload.name}/${granularity}`;
    const stages: GranularityResult['ramp'] = [];
    let unsafe = false;
    let probesRun = 0;
    const search = await searchCapacity(
      async (rate) => {
        if (interrupt.interrupted || unsafe) throw new SearchStopped();
        const started = Date.now();
        const probe = await runProbe(ctx, workload, granularity, trial, rate);
        clock.probe.took((Date.now() - started) / 1000);
        probesRun++;
        stages.push(probe.stage);
        outcome.notes.push(...probe.notes);
        if (probe.phantoms > 0 && result.safety) result.safety = { ...result.safety, phantomCount: (result.safety.phantomCount ?? 0) + probe.phantoms };
        if (probe.unsafe) {
          unsafe = true;
          outcome.failures++;
          if (result.safety) result.safety = { ...result.safety, ok: false, violationCount: result.safety.violationCount + 1 };
        }
        const { verdict } = probe;
        log(
          `${where} [${granularity}] probe ${rate} ops/s: ${verdict.good ? 'met the objective' : `missed it (${verdict.reasons.join(', ')})`}; ` +
            `goodput ${verdict.goodputRate.toFixed(1)}, acquire p99 ${Math.round(verdict.acquireP99)} ms ` +
            `(${clock.left(later, Math.max(0, clock.probesFor(config, trial) - probesRun), config, clock.engineSearchIn(config, trial))})`,
        );
        return verdict;
      },
      config.capacity.search,
      brackets.get(key),
    ).catch((error: unknown) => {
      if (error instanceof SearchStopped) return undefined;
      throw error;
    });
    if (!search) {
      if (interrupt.interrupted) break;
      continue;
    }
    clock.searchTook(trial, search.probes.length);
    result.capacity = search;
    if (config.schedule.ramp.levels.length === 0) {
      result.ramp = [...stages].sort((a, b) => a.offeredRate - b.offeredRate);
      result.saturation = saturationOf(result.ramp);
    }
    if (!brackets.has(key)) brackets.set(key, { good: search.capacity, bad: search.failedAt });
    // The search's conclusion, and the engine-only search's when it runs: one line.
    let capacityLine =
      `${where} [${granularity}] capacity ${search.capacity} ops/s` +
      (search.failedAt !== null ? `, missed the objective at ${search.failedAt} ops/s` : ', the search maximum') +
      (search.truncated ? ' (stopped at the probe limit)' : '') +
      ` after ${search.probes.length} probe(s)`;
    if (ctx.engine && clock.engineSearchIn(config, trial) && !interrupt.interrupted) {
      const engineStarted = Date.now();
      const engine = await ctx.engine.searchCapacity(workload, granularity, trial, {
        probeS: config.engine.probeS,
        objective: config.capacity.objective,
        search: config.capacity.search,
      });
      clock.engine.took((Date.now() - engineStarted) / 1000);
      result.engine = engine;
      if (!engine.safetyOk) outcome.failures++;
      capacityLine +=
        `; on the engine alone ${engine.capacity.capacity} ops/s` +
        (engine.capacity.failedAt !== null ? `, missed at ${engine.capacity.failedAt}` : '') +
        `, ${engine.requestsPerOp.toFixed(1)} requests to the lock store per operation` +
        (engine.safetyOk ? '' : `, SAFETY VIOLATED (${engine.violationCount})`);
    }
    log(capacityLine);
  }
  if (interrupt.interrupted) {
    outcome.notes.push('interrupted before all runs finished; numbers cover the completed runs only');
    outcome.failures++;
  }
  return outcome;
}

class SearchStopped extends Error {
  override name = 'SearchStopped';
}
