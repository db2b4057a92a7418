/**
 * A new incarnation of the lock index racing the holders' writes, every schedule up to a bound: the
 * real engine over the in-memory store, every store call of every process a step, explored
 * systematically (test/support/systematic.ts: all schedules within EXHAUSTIVE_DEVIATIONS deviations
 * from the default one, time passing at most EXHAUSTIVE_TICKS times). The operator's step is one step
 * of its own, anywhere in the schedule:
 * - an adoption of a restored copy as the next incarnation (index:create --adopt): holders, claims and
 *   records carry on, and a write decided on the earlier incarnation does not apply. H takes a piece
 *   of work on, renews and records; C, another delivery, comes once. I1, I2, I3, I5, I10.
 * - a forced re-creation (index:create --recreate --force): every holder goes with the old incarnation,
 *   as documented, fenced off by the new one's larger tokens. H holds and renews; C acquires. I1 and
 *   I2 within one incarnation, I3 (a grant or renewal of the new one stands on it), I5.
 *
 * What the in-memory store models of an incarnation (packages/engine/src/memory-store.ts): the switch is
 * atomic, and a write pinned to an earlier incarnation answers `missing` (the real store may answer
 * `conflict`, from an empty index the cluster auto-created under the old name: the engine reads again
 * either way). What the real store does with a write block on the incarnation left, and with that
 * empty index, is the real node's to show (test/engine/incarnations.test.ts).
 *
 * EXHAUSTIVE_DEVIATIONS (default 2) and EXHAUSTIVE_TICKS (default 3) go deeper.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LockTarget } from '../../packages/engine/src/model.js';
import { deliverWork, holdLock, Stage, world } from '../support/exhaustive-world.js';
import { type Bounds, describeFailures, explore } from '../support/systematic.js';

const DEVIATIONS = Number(process.env.EXHAUSTIVE_DEVIATIONS ?? 2);
const TICKS = Number(process.env.EXHAUSTIVE_TICKS ?? 3);
const BOUNDS: Bounds = { deviations: DEVIATIONS, ticks: TICKS, maxSteps: 300, maxSchedules: 2_000_000 };
const SKEW = 100;
const TTL = 1_000;
const TARGET: LockTarget = { namespace: 'i', granularity: 'document', ids: ['a'] };
// Signed tokens: a renewal goes in place (one conditional write at the version the holder's last write
// left, operations/renew-in-place.ts) and a release takes its fast path, both racing the operator.
const SETTINGS = {
  ttl: { minMs: 1, defaultMs: TTL, maxMs: 10_000 },
  retry: { baseDelayMs: 5, maxDelayMs: 40 },
  contentionBudgetMs: 150,
  tokenSigningKey: Buffer.alloc(32, 3),
};
const PROCESSES = { H: { offset: -SKEW / 2, skewMs: SKEW }, operator: { offset: 0, skewMs: SKEW }, C: { offset: SKEW / 2, skewMs: SKEW } };

// The engine's jitter, fixed: every schedule replays the same way.
beforeEach(() => {
  vi.spyOn(Math, 'random').mockReturnValue(0.5);
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe('a new incarnation of the lock index racing writes, every schedule up to a bound', () => {
  it(`an adoption racing a work grant, a renewal and a record: I1, I2, I3, I5, I10 in every schedule within ${DEVIATIONS} deviations`, async () => {
    const stage = new Stage(SETTINGS);
    const report = await explore((scheduler) => {
      const w = world(stage, scheduler, { processes: PROCESSES });
      const options = { ttlMs: TTL, recordTtlMs: 5_000 };
      return {
        actors: [
          ['H', () => deliverWork(w, 'H', TARGET, 'job', { ...options, renew: true })],
          ['operator', () => scheduler.schedule('adopts a restored copy as the next incarnation', () => w.memory.adoptAsNextIncarnation())],
          ['C', () => deliverWork(w, 'C', TARGET, 'job', options)],
        ],
        nextInstant: w.nextInstant,
        check: () => w.checks.check(),
      };
    }, BOUNDS);
    console.log(`adoption: ${report.schedules} schedules in ${report.ms} ms (${report.failures} failing, ${report.cut} cut)`);
    expect(describeFailures('adoption', report)).toBe('');
    expect(report.truncated).toBe(false);
  }, 600_000);

  it(`a forced re-creation racing a grant and a renewal: I1 and I2 within an incarnation, I3, I5 in every schedule within ${DEVIATIONS} deviations`, async () => {
    const stage = new Stage(SETTINGS);
    const report = await explore((scheduler) => {
      const w = world(stage, scheduler, { processes: PROCESSES, recreated: true });
      return {
        actors: [
          ['H', () => holdLock(w, 'H', TARGET, { ttlMs: TTL, renew: true })],
          ['operator', () => scheduler.schedule('re-creates the lock index (forced)', () => w.memory.recreate())],
          ['C', () => holdLock(w, 'C', TARGET, { ttlMs: TTL })],
        ],
        nextInstant: w.nextInstant,
        check: () => w.checks.check(),
      };
    }, BOUNDS);
    console.log(`re-creation: ${report.schedules} schedules in ${report.ms} ms (${report.failures} failing, ${report.cut} cut)`);
    expect(describeFailures('re-creation', report)).toBe('');
    expect(report.truncated).toBe(false);
  }, 600_000);
});
