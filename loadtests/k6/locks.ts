/**
 * k6 load test of one lock granularity over the file-tree workload.
 *
 *   k6 run -e GRANULARITY=document -e BASE_URL=http://localhost:3000 loadtests/k6/locks.ts
 *
 * The orchestrator (`npm run loadtest`) passes the full configuration as JSON in LT_CONFIG, runs
 * the three granularities one after another with the same offered load, and checks every critical
 * section logged here (lines starting with HOLD_MARKER) for overlapping conflicting holds.
 *
 * Scenarios (open model):
 *   steady - constant-arrival-rate at the configured rate: the head-to-head comparison;
 *   ramp   - ramping-arrival-rate through increasing levels, each held for a step: the saturation point.
 *
 * Each iteration is the kit's one iteration (shared/iteration.ts), the same the engine driver runs
 * in Node, here over the HTTP API (lock-api.ts) with k6's metrics (k6-driver.ts). The thresholds
 * carry the objective (shared/objective.ts): a run fails the way the orchestrator judges a probe.
 */
import { sleep } from 'k6';
import exec from 'k6/execution';
import { Trend } from 'k6/metrics';
import { explainRefusal } from '../shared/access-refusal.ts';
import { defaultRetry, defaultSchedule, defaultWorkload, runConfig } from '../shared/defaults.ts';
import { type IterationPlan, runIteration } from '../shared/iteration.ts';
import { DEFAULT_OBJECTIVE, objectiveThresholds } from '../shared/objective.ts';
import { type SummaryMetrics, summaryLine } from '../shared/summary-line.ts';
import { userWorkloadOf } from '../shared/user-workload.ts';
import { type Granularity, type K6RunConfig, namespaceFor, OP_KINDS, operationSource, rampLevelAt, rampStages, stageTag } from '../shared/workload.ts';
import { k6Driver } from './k6-driver.ts';
import { LockApi } from './lock-api.ts';

function loadConfig(): K6RunConfig {
  if (__ENV.LT_CONFIG) return JSON.parse(__ENV.LT_CONFIG) as K6RunConfig;
  // STRATEGY is read too: scripts written against the kit set it.
  const granularity = (__ENV.GRANULARITY ?? __ENV.STRATEGY ?? 'document') as Granularity;
  const runId = __ENV.RUN_ID ?? `k6${Date.now().toString(36)}`;
  const workload = defaultWorkload();
  const schedule = defaultSchedule();
  if (__ENV.RATE) schedule.steady.rate = Number(__ENV.RATE);
  if (__ENV.DURATION) schedule.steady.durationS = Number(__ENV.DURATION);
  const objective = { ...DEFAULT_OBJECTIVE };
  if (__ENV.SLO_P99) objective.p99Ms = Number(__ENV.SLO_P99);
  return runConfig({
    runId,
    granularity,
    namespace: namespaceFor(granularity, runId, workload.name),
    workload,
    schedule,
    retry: defaultRetry(),
    ttlMs: 15_000,
    objective,
  });
}

const cfg = loadConfig();
const BASE_URL = (__ENV.BASE_URL ?? 'http://localhost:3000').replace(/\/+$/, '');
/** What is tested, when BASE_URL is the kit's signing proxy in front of it (the refusals name it). */
const TARGET_URL = (__ENV.TARGET_URL || BASE_URL).replace(/\/+$/, '');
const api = new LockApi(BASE_URL, { granularity: cfg.granularity });
/** The user's tree and trace, when given (files the orchestrator wrote and validated). */
const user = userWorkloadOf(cfg.workload, (file) => open(file));
const source = operationSource(cfg.workload, user);
const replaying = Boolean(cfg.replay && user.trace);
const replayLag = new Trend('replay_lag', true);

const stages = ['steady', ...cfg.ramp.levels.map((level) => stageTag(level))];
const ops = OP_KINDS;

function thresholds(): Record<string, string[]> {
  const result: Record<string, string[]> = {
    http_req_failed: ['rate<0.01'],
    // Every response is checked (lock-api.ts): at least 99% must be an answer the API promises (a 409 or a
    // contention 503 counts as one). Stricter than http_req_failed: a plain 503 or a 200 without its body fails it.
    checks: ['rate>=0.99'],
  };
  // Thresholds that always pass make k6 put these tagged sub-metrics into the summary.
  for (const stage of stages) {
    for (const counter of ['ops_offered', 'goodput', 'gave_up', 'conflicts', 'retries', 'error_count']) {
      result[`${counter}{stage:${stage}}`] = ['count>=0'];
    }
    result[`acquire_latency{stage:${stage}}`] = ['p(99)>=0'];
    result[`acquire_request{stage:${stage}}`] = ['p(99)>=0'];
    result[`op_duration{stage:${stage}}`] = ['p(99)>=0'];
    result[`conflict_rate{stage:${stage}}`] = ['rate>=0'];
  }
  for (const op of ops) {
    result[`goodput{stage:steady,op:${op}}`] = ['count>=0'];
    result[`gave_up{stage:steady,op:${op}}`] = ['count>=0'];
    result[`acquire_latency{stage:steady,op:${op}}`] = ['p(99)>=0'];
  }
  result.dropped_iterations = ['count>=0'];
  for (const scenario of ['steady', 'ramp']) result[`dropped_iterations{scenario:${scenario}}`] = ['count>=0'];
  // The objective, as the orchestrator judges a capacity probe (shared/objective.ts): goodput of the
  // steady stage against the operations it offers, its acquire p99, and errors (gave-up after
  // conflicts is not an error) under 1% of operations.
  const offered = replaying ? user.trace!.length : cfg.steady.rate * cfg.steady.durationS;
  return { ...result, ...objectiveThresholds(cfg.objective, offered) };
}

function scenarios(): Record<string, Record<string, unknown>> {
  const common = { timeUnit: '1s', gracefulStop: `${cfg.gracefulStopS}s` };
  const result: Record<string, Record<string, unknown>> = {
    // A trace is replayed in order at its own timing: one iteration per recorded operation.
    steady: replaying
      ? {
          executor: 'shared-iterations',
          gracefulStop: `${cfg.gracefulStopS}s`,
          vus: cfg.vus.max,
          iterations: user.trace!.length,
          maxDuration: `${cfg.steady.durationS + 30}s`,
        }
      : {
          ...common,
          executor: 'constant-arrival-rate',
          rate: cfg.steady.rate,
          duration: `${cfg.steady.durationS}s`,
          preAllocatedVUs: cfg.vus.preAllocated,
          maxVUs: cfg.vus.max,
        },
  };
  if (cfg.ramp.levels.length > 0) {
    result.ramp = {
      ...common,
      executor: 'ramping-arrival-rate',
      startTime: `${cfg.ramp.startAfterS}s`,
      startRate: cfg.ramp.levels[0] ?? 1,
      preAllocatedVUs: cfg.vus.preAllocated,
      maxVUs: cfg.vus.max,
      stages: rampStages(cfg.ramp),
    };
  }
  return result;
}

export const options = {
  scenarios: scenarios(),
  thresholds: thresholds(),
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)', 'count'],
  setupTimeout: '60s',
};

export function setup(): { startedAt: number } {
  // Fail fast on a wrong answer; allow a busy machine a couple of retries when nothing answers.
  let health = api.health();
  for (let attempt = 1; health.status === 0 && attempt < 3; attempt++) {
    sleep(1);
    health = api.health();
  }
  const refusal = explainRefusal({ method: 'GET', path: '/health', status: health.status, body: health.body, target: TARGET_URL });
  const through = TARGET_URL === BASE_URL ? '' : ` (through the signing proxy ${BASE_URL})`;
  if (refusal) exec.test.abort(`${refusal}${through}${health.status === 0 ? '; is the service up?' : ''}`);
  return { startedAt: Date.now() };
}

const driver = k6Driver(api, cfg.granularity);
const plan: IterationPlan = {
  granularity: cfg.granularity,
  namespace: cfg.namespace,
  ttlMs: cfg.ttlMs,
  retry: cfg.retry,
  criticalSectionMs: cfg.workload.criticalSectionMs,
  operations: source,
};

function currentStage(): string {
  if (exec.scenario.name !== 'ramp') return 'steady';
  return stageTag(rampLevelAt(cfg.ramp, Date.now() - exec.scenario.startTime));
}

/** One operation: the kit's one iteration (shared/iteration.ts) over the HTTP API. */
export default async function (): Promise<void> {
  const stage = currentStage();
  const index = exec.scenario.iterationInTest;
  if (replaying && exec.scenario.name === 'steady') {
    // Wait for the operation's recorded time (scaled); a late start shows as replay lag.
    const dueAt = exec.scenario.startTime + user.trace![index]!.atMs / (cfg.workload.traceSpeed ?? 1);
    const wait = dueAt - Date.now();
    if (wait > 0) sleep(wait / 1000);
    else replayLag.add(-wait);
  }
  const owner = `${cfg.runId}-${cfg.granularity}-vu${exec.vu.idInTest}`;
  await runIteration(driver, plan, { index, stage, owner, requestId: `${owner}-${exec.scenario.name}-${index}` });
}

/**
 * With SUMMARY_PATH (the orchestrator's capacity probes): the summary data as JSON there and one line
 * on stdout, in place of k6's own summary. Without it nothing is returned, which is what makes k6
 * print its own end-of-test summary (and write --summary-export, if given): the orchestrator's
 * expected-rate runs and runs by hand.
 */
export function handleSummary(data: SummaryMetrics): Record<string, string> | undefined {
  const file = __ENV.SUMMARY_PATH;
  if (!file) return undefined;
  return { [file]: JSON.stringify({ ...data, ltConfig: cfg }, null, 2), stdout: `${summaryLine(cfg.granularity, cfg.steady, data)}\n` };
}
