/** The objective, defined once: the k6 thresholds of a run fail exactly when the orchestrator's judge says the rate was missed. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_OBJECTIVE, judge, OBJECTIVE_METRICS, type Objective, objectiveThresholds } from '../../loadtests/shared/objective.js';

/** What k6 would measure on the steady stage of a run offering `rate` ops/s for `seconds`. */
interface Measured {
  goodput: number;
  acquireP99: number;
  errorRate: number;
}

/** A tiny evaluator of the threshold expressions the kit generates (k6's own syntax: aggregation, operator, number). */
function passes(expression: string, values: Record<string, number>): boolean {
  const match = /^(count|rate|p\(99\))(<=|>=|<|>)(-?[\d.]+)$/.exec(expression);
  if (!match) throw new Error(`not an expression the kit generates: ${expression}`);
  const [, aggregation, operator, bound] = match as unknown as [string, string, string, string];
  const value = values[aggregation]!;
  const limit = Number(bound);
  return operator === '<=' ? value <= limit : operator === '>=' ? value >= limit : operator === '<' ? value < limit : value > limit;
}

function k6Passes(objective: Objective, rate: number, seconds: number, measured: Measured): boolean {
  const values: Record<string, Record<string, number>> = {
    'goodput{stage:steady}': { count: measured.goodput },
    'acquire_latency{stage:steady}': { 'p(99)': measured.acquireP99 },
    errors: { rate: measured.errorRate },
  };
  return Object.entries(objectiveThresholds(objective, rate * seconds)).every(([metric, expressions]) =>
    expressions.every((expression) => passes(expression, values[metric]!)),
  );
}

function judgePasses(objective: Objective, rate: number, seconds: number, measured: Measured): boolean {
  return judge({ rate, goodputRate: measured.goodput / seconds, acquireP99: measured.acquireP99, errorRate: measured.errorRate, dropped: 0 }, objective).good;
}

describe('the objective as k6 thresholds', () => {
  it('are generated from the one definition, on metrics the k6 script records', () => {
    expect(objectiveThresholds(DEFAULT_OBJECTIVE, 60 * 8)).toEqual({
      'goodput{stage:steady}': ['count>=456'],
      'acquire_latency{stage:steady}': ['p(99)<=250'],
      errors: ['rate<0.01'],
    });
    // A fraction of an operation stays as it is, without floating-point tails.
    expect(objectiveThresholds({ ...DEFAULT_OBJECTIVE, p99Ms: 150 }, 30)['goodput{stage:steady}']).toEqual(['count>=28.5']);
    expect(objectiveThresholds({ ...DEFAULT_OBJECTIVE, p99Ms: 150 }, 30)['acquire_latency{stage:steady}']).toEqual(['p(99)<=150']);
    // The metrics whose thresholds are the objective's alone (errors also fails a run outright).
    expect([...OBJECTIVE_METRICS].sort()).toEqual(
      Object.keys(objectiveThresholds(DEFAULT_OBJECTIVE, 1))
        .filter((name) => name !== 'errors')
        .sort(),
    );
  });

  it('fail exactly where the judge says the objective was missed, at its edges', () => {
    const objective = DEFAULT_OBJECTIVE;
    const cases: Array<[number, number, Measured]> = [];
    for (const [rate, seconds] of [
      [40, 5],
      [10, 2],
      [60, 8],
      [160, 5],
    ] as const) {
      const needed = Math.ceil(objective.goodputRatio * rate * seconds);
      for (const goodput of [needed - 1, needed, rate * seconds]) {
        for (const acquireP99 of [12, 250, 250.5, 900]) {
          for (const errorRate of [0, 0.0099, 0.01, 0.2]) cases.push([rate, seconds, { goodput, acquireP99, errorRate }]);
        }
      }
    }
    let missed = 0;
    for (const [rate, seconds, measured] of cases) {
      const verdict = judgePasses(objective, rate, seconds, measured);
      if (!verdict) missed++;
      expect(k6Passes(objective, rate, seconds, measured), `${rate} ops/s for ${seconds} s: ${JSON.stringify(measured)}`).toBe(verdict);
    }
    // Both outcomes occur: the agreement is not all-pass or all-fail.
    expect(missed).toBeGreaterThan(0);
    expect(missed).toBeLessThan(cases.length);
  });
});
