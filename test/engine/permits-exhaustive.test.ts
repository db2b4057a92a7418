/**
 * Semaphores (docs/permits.md), every schedule up to a bound: the real engine over the in-memory
 * store, every store call of every process a step, explored systematically (test/support/systematic.ts:
 * all schedules within EXHAUSTIVE_DEVIATIONS deviations from the default one, time passing at most
 * EXHAUSTIVE_TICKS times). Three callers take permits of one semaphore of limit 2 (1, 2 and 1
 * permits; the first renews once), on clocks at the bound. Checked on every schedule: I11 (the
 * permits of the holds that overlap in true time fit the limit), I3 and I5 (test/support/operation-checks.ts).
 *
 * Why the in-memory store: the real node cannot be made to take a chosen order of calls, nor to hold
 * a write's answer while others run; semaphores run on the real node in permits.test.ts.
 *
 * EXHAUSTIVE_DEVIATIONS (default 2) and EXHAUSTIVE_TICKS (default 3) go deeper.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LockTarget } from '../../packages/engine/src/model.js';
import { holdLock, Stage, world } from '../support/exhaustive-world.js';
import { type Bounds, describeFailures, explore } from '../support/systematic.js';

const DEVIATIONS = Number(process.env.EXHAUSTIVE_DEVIATIONS ?? 2);
const TICKS = Number(process.env.EXHAUSTIVE_TICKS ?? 3);
const BOUNDS: Bounds = { deviations: DEVIATIONS, ticks: TICKS, maxSteps: 300, maxSchedules: 2_000_000 };
const SKEW = 100;
const TTL = 1_000;
const SEMAPHORE: LockTarget = { namespace: 'p', granularity: 'document', ids: ['s'] };
const SETTINGS = { ttl: { minMs: 1, defaultMs: TTL, maxMs: 10_000 }, retry: { baseDelayMs: 5, maxDelayMs: 40 }, contentionBudgetMs: 150 };

// The engine's jitter, fixed: every schedule replays the same way.
beforeEach(() => {
  vi.spyOn(Math, 'random').mockReturnValue(0.5);
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe('semaphores, every schedule up to a bound', () => {
  it(`three callers on a limit of 2, clocks at the bound: I11, I3, I5 in every schedule within ${DEVIATIONS} deviations`, async () => {
    const stage = new Stage(SETTINGS);
    const report = await explore((scheduler) => {
      const w = world(stage, scheduler, {
        processes: { P1: { offset: -SKEW / 2, skewMs: SKEW }, P2: { offset: SKEW / 2, skewMs: SKEW }, P3: { offset: SKEW / 2, skewMs: SKEW } },
      });
      const permits = (count: number) => ({ ttlMs: TTL, permits: { limit: 2, count } });
      return {
        actors: [
          ['P1', () => holdLock(w, 'P1', SEMAPHORE, { ...permits(1), renew: true })],
          ['P2', () => holdLock(w, 'P2', SEMAPHORE, permits(2))],
          ['P3', () => holdLock(w, 'P3', SEMAPHORE, permits(1))],
        ],
        nextInstant: w.nextInstant,
        check: () => w.checks.check(),
      };
    }, BOUNDS);
    console.log(`permits: ${report.schedules} schedules in ${report.ms} ms (${report.failures} failing, ${report.cut} cut)`);
    expect(describeFailures('permits', report)).toBe('');
    expect(report.truncated).toBe(false);
  }, 600_000);
});
