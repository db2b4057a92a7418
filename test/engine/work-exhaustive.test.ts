/**
 * Work that runs once (docs/protocol.md, W1-W4), every schedule up to a bound: the real engine over
 * the in-memory store, every store call of every process a step, explored systematically
 * (test/support/systematic.ts: all schedules with at most EXHAUSTIVE_DEVIATIONS deviations, time
 * passing at most EXHAUSTIVE_TICKS times, each to the next instant at which a process's decision may
 * change). Checked on every schedule: I1, I2, I3, I5, I10 (test/support/operation-checks.ts).
 *
 * The configuration: two deliveries of one piece of work (D1, whose clock runs half the skew
 * allowance behind, and D2, half ahead: two clocks at the bound), each acquiring it and, granted,
 * working, then recording `completed` as it releases; D2, refused (in progress), is delivered again
 * once. The sweeper (its clock ahead) runs once. Time passes past leases, claims and records.
 *
 * Why the in-memory store: the real node cannot be made to take a chosen order of calls, nor to hold
 * a write's answer while others run; everything else about work records runs on the real node
 * (work-once.test.ts).
 *
 * EXHAUSTIVE_DEVIATIONS (default 2) and EXHAUSTIVE_TICKS (default 3) go deeper; a failure prints, for
 * each kind of violation, the schedule with the fewest deviations, then steps (* marks a deviation).
 * At the defaults: 1,521 schedules (the four *-exhaustive files together: 13,231 schedules, 41 s of CPU
 * on this project's 2-core machine, `time npx vitest run test/engine/*-exhaustive.test.ts --project elasticsearch`).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LockTarget } from '../../packages/engine/src/model.js';
import { deliverWork, Stage, world } from '../support/exhaustive-world.js';
import { type Bounds, describeFailures, explore } from '../support/systematic.js';

const DEVIATIONS = Number(process.env.EXHAUSTIVE_DEVIATIONS ?? 2);
const TICKS = Number(process.env.EXHAUSTIVE_TICKS ?? 3);
const BOUNDS: Bounds = { deviations: DEVIATIONS, ticks: TICKS, maxSteps: 200, maxSchedules: 2_000_000 };
const SKEW = 100;
const TTL = 1_000;
const RECORD_TTL = 2_000;
const TARGET: LockTarget = { namespace: 'w', granularity: 'document', ids: ['a'] };
const SETTINGS = { ttl: { minMs: 1, defaultMs: TTL, maxMs: 10_000 }, retry: { baseDelayMs: 5, maxDelayMs: 40 }, contentionBudgetMs: 150 };

// The engine's jitter, fixed: every schedule replays the same way.
beforeEach(() => {
  vi.spyOn(Math, 'random').mockReturnValue(0.5);
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe('work that runs once, every schedule up to a bound', () => {
  // The second delivery carries the first one's payload (no hashes: as older callers), or another one: then it is
  // refused by name while the first's claim or record stands, never answered that record, and runs once they are gone.
  it.each([
    { payloads: 'one payload', d1: undefined, d2: undefined },
    { payloads: 'another payload for D2', d1: 'payload-one', d2: 'payload-two' },
  ])(
    `two deliveries ($payloads), the sweeper and a record's expiry, clocks at the bound: I1, I2, I3, I5, I10 in every schedule within ${DEVIATIONS} deviations`,
    async ({ d1, d2 }) => {
      const stage = new Stage(SETTINGS);
      const report = await explore((scheduler) => {
        const w = world(stage, scheduler, {
          processes: { D1: { offset: -SKEW / 2, skewMs: SKEW }, D2: { offset: SKEW / 2, skewMs: SKEW }, sweeper: { offset: SKEW / 2, skewMs: SKEW } },
        });
        const options = { ttlMs: TTL, recordTtlMs: RECORD_TTL };
        const first = d1 === undefined ? options : { ...options, payloadHash: d1 };
        const second = d2 === undefined ? options : { ...options, payloadHash: d2 };
        return {
          actors: [
            ['D1', () => deliverWork(w, 'D1', TARGET, 'job', first)],
            [
              'D2',
              async () => {
                if ((await deliverWork(w, 'D2', TARGET, 'job', second)) === 'refused') await deliverWork(w, 'D2', TARGET, 'job', second);
              },
            ],
            ['sweeper', () => w.engineOf('sweeper').sweep()],
          ],
          nextInstant: w.nextInstant,
          check: () => w.checks.check(),
        };
      }, BOUNDS);
      console.log(
        `work (${d2 === undefined ? 'one payload' : 'two payloads'}): ${report.schedules} schedules in ${report.ms} ms (${report.failures} failing, ${report.cut} cut)`,
      );
      expect(describeFailures('work', report)).toBe('');
      expect(report.truncated).toBe(false);
    },
    600_000,
  );
});
