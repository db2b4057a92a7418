/**
 * An operator's revoke, sweep and drain racing the holders' calls, every schedule up to a bound: the
 * real engine over the in-memory store, every store call of every process a step, explored
 * systematically (test/support/systematic.ts: all schedules within EXHAUSTIVE_DEVIATIONS deviations
 * from the default one, time passing at most EXHAUSTIVE_TICKS times). Checked on every schedule: I1,
 * I2, I3, I5, I10 (test/support/operation-checks.ts).
 *
 * - A revoke racing an acquire, a renew and a record: H takes a piece of work on (acquireWork),
 *   works, renews, works and records `completed` as it releases; the operator revokes the target
 *   once; C, another delivery of the same work, comes once. A revoked lease renews nothing (a renewal
 *   sent after the revoke's write) and records nothing after that write; its hold ends there.
 * - An operator's process configured otherwise than the functions (issue 41, item 8): the functions
 *   allow a large clock skew and H's clock runs behind by most of it, inside the bound; the operator's
 *   sweep or drain runs with its own settings source's allowance. Configured like the functions, no
 *   schedule breaks; with the CLI's default (a tenth of a second here), the exploration finds H's lease
 *   taken off while H still holds it, and C granted over it. Modelled as two engines over one store:
 *   once the allowance is stored with the lock index, the operator's engine reads it (or refuses to
 *   write) and that test asserts that nothing breaks.
 *
 * Why the in-memory store: the real node cannot be made to take a chosen order of calls, nor to hold
 * a write's answer while others run; revoke and drain run on the real node in revoke-and-drain.test.ts.
 *
 * EXHAUSTIVE_DEVIATIONS (default 2) and EXHAUSTIVE_TICKS (default 3) go deeper; a failure prints, for
 * each kind of violation, the schedule with the fewest deviations, then steps (* marks a deviation).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LockTarget } from '../../functions/core/model.js';
import { deliverWork, fieldsOf, holdLock, Stage, type World, world } from '../support/exhaustive-world.js';
import { type Bounds, describeFailures, type ExplorationReport, explore } from '../support/systematic.js';

const DEVIATIONS = Number(process.env.EXHAUSTIVE_DEVIATIONS ?? 2);
const TICKS = Number(process.env.EXHAUSTIVE_TICKS ?? 3);
const BOUNDS: Bounds = { deviations: DEVIATIONS, ticks: TICKS, maxSteps: 300, maxSchedules: 2_000_000 };
const SKEW = 100;
const TTL = 1_000;
const TARGET: LockTarget = { namespace: 'r', granularity: 'document', ids: ['a'] };
const SETTINGS = { ttl: { minMs: 1, defaultMs: TTL, maxMs: 10_000 }, retry: { baseDelayMs: 5, maxDelayMs: 40 }, contentionBudgetMs: 150 };
const admin = { ...fieldsOf(TARGET), reason: 'exploration', by: 'operator' };

// The engine's jitter, fixed: every schedule replays the same way.
beforeEach(() => {
  vi.spyOn(Math, 'random').mockReturnValue(0.5);
});
afterEach(() => {
  vi.restoreAllMocks();
});

const summary = (name: string, report: ExplorationReport): string =>
  `${name}: ${report.schedules} schedules in ${report.ms} ms (${report.failures} failing, ${report.cut} cut)`;

describe('an operator racing the holders, every schedule up to a bound', () => {
  it(`a revoke racing an acquire, a renew and a record: I1, I2, I3, I5, I10 in every schedule within ${DEVIATIONS} deviations`, async () => {
    const stage = new Stage(SETTINGS);
    const report = await explore((scheduler) => {
      const w = world(stage, scheduler, {
        processes: { H: { offset: -SKEW / 2, skewMs: SKEW }, operator: { offset: SKEW / 2, skewMs: SKEW }, C: { offset: SKEW / 2, skewMs: SKEW } },
        revokers: ['operator'],
      });
      const options = { ttlMs: TTL, recordTtlMs: 5_000 };
      return {
        actors: [
          ['H', () => deliverWork(w, 'H', TARGET, 'job', { ...options, renew: true })],
          ['operator', () => w.engineOf('operator').revoke(admin)],
          ['C', () => deliverWork(w, 'C', TARGET, 'job', options)],
        ],
        nextInstant: w.nextInstant,
        check: () => w.checks.check(),
      };
    }, BOUNDS);
    console.log(summary('revoke', report));
    expect(describeFailures('revoke', report)).toBe('');
    expect(report.truncated).toBe(false);
  }, 600_000);

  /** H holds (its clock behind by most of the functions' allowance), the operator sweeps or drains with its own allowance, C acquires. */
  const operatorRacing = (operation: 'sweep' | 'drain', operatorSkewMs: number): Promise<ExplorationReport> => {
    const functionsSkew = 2_000;
    const stage = new Stage(SETTINGS);
    return explore((scheduler) => {
      const w: World = world(stage, scheduler, {
        processes: {
          H: { offset: -functionsSkew / 2, skewMs: functionsSkew },
          operator: { offset: functionsSkew / 2, skewMs: operatorSkewMs },
          C: { offset: functionsSkew / 2, skewMs: functionsSkew },
        },
      });
      const operator = w.engineOf('operator');
      return {
        actors: [
          ['H', () => holdLock(w, 'H', TARGET, { ttlMs: TTL })],
          ['operator', () => (operation === 'sweep' ? operator.sweep() : operator.drain(admin))],
          ['C', () => holdLock(w, 'C', TARGET, { ttlMs: TTL })],
        ],
        nextInstant: w.nextInstant,
        check: () => w.checks.check(),
      };
    }, BOUNDS);
  };

  for (const operation of ['sweep', 'drain'] as const) {
    it(`the operator's ${operation} configured like the functions: I1, I3, I5 in every schedule within ${DEVIATIONS} deviations`, async () => {
      const report = await operatorRacing(operation, 2_000);
      console.log(summary(`operator ${operation}, same settings`, report));
      expect(describeFailures(`operator ${operation}`, report)).toBe('');
    }, 600_000);
  }

  it("the operator's sweep with the CLI's own default allowance against the functions' larger one: found (issue 41, item 8)", async () => {
    // Until the allowance is one value stored with the lock index, two processes may disagree on it: this
    // shows what the exploration finds then. Wired to the stored settings, the operator's engine refuses
    // to write or uses the functions' value, and this test asserts that nothing breaks.
    const report = await operatorRacing('sweep', 100);
    console.log(summary('operator sweep, default allowance', report));
    console.log(describeFailures('operator sweep with its own default allowance', report));
    expect([...report.kinds.keys()]).toEqual(expect.arrayContaining([expect.stringMatching(/^I5/), expect.stringMatching(/^I1/)]));
  }, 600_000);
});
