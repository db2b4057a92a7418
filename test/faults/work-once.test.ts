/** The work-revoke run's deliveries: at least once (again until done), some twice at once, some again later, some around the record's expiry. */
import { describe, expect, it } from 'vitest';
import { behaviourOf, SHORT_FAULTS } from '../../faults/catalog.js';
import { Deliveries, emptyWorkTally, type Message, RECORD_TTL_MS, WORK_ONCE } from '../../faults/work-once.js';

/** A seeded generator, so that the counts below do not depend on chance. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('the work-revoke deliveries', () => {
  it('deliver some messages twice at once, and each on one of the documents', () => {
    const tally = emptyWorkTally();
    const deliveries = new Deliveries(4, seeded(5), tally);
    const taken = Array.from({ length: 400 }, () => deliveries.take(0));
    const twice = taken.filter((message, position) => taken.indexOf(message) !== position);
    expect(twice.length / tally.messages).toBeGreaterThan(WORK_ONCE.twinRate / 2);
    expect(twice.length / tally.messages).toBeLessThan(WORK_ONCE.twinRate * 2);
    expect(new Set(taken.map((message) => message.id))).toEqual(new Set(['k0', 'k1', 'k2', 'k3']));
    expect(tally.deliveries).toBe(400);
  });

  it('deliver a message again until it is done, up to the limit, and a done one sometimes once more, some around its record’s expiry', () => {
    const deliveries = new Deliveries(4, seeded(9), emptyWorkTally());
    const undone = deliveries.take(0);
    deliveries.ended(undone, false, 0);
    // Not yet due: a new message comes first; due after 1.5 s at most.
    expect(deliveries.take(200)).not.toBe(undone);
    expect(deliveries.take(1_500)).toBe(undone);
    for (let round = 0; round < 20; round++) deliveries.ended(undone, false, 10_000 * round);
    expect(undone.deliveries).toBeLessThanOrEqual(WORK_ONCE.maxDeliveries);

    const done: Message[] = [];
    const again: number[] = [];
    for (let round = 0; round < 400; round++) {
      const fresh = new Deliveries(1, seeded(round + 1), emptyWorkTally());
      const message = fresh.take(0);
      // A twin (delivered twice at once) is not what this counts.
      if (fresh.take(0) === message) continue;
      fresh.ended(message, true, 0);
      done.push(message);
      for (let at = 0; at <= RECORD_TTL_MS + 1_500; at += 50) {
        const next = fresh.take(at);
        if (next === message) {
          again.push(at);
          break;
        }
      }
    }
    expect(done.every((message) => message.done)).toBe(true);
    const share = again.length / done.length;
    expect(share).toBeGreaterThan(WORK_ONCE.againRate / 2);
    expect(share).toBeLessThan(WORK_ONCE.againRate * 2);
    expect(again.some((at) => at < RECORD_TTL_MS - 400)).toBe(true);
    expect(again.filter((at) => Math.abs(at - RECORD_TTL_MS) <= 450).length).toBeGreaterThan(again.length / 5);
  });

  it('run with clocks within the bound, work-revoke and work-revoke-kill, neither in --short', () => {
    for (const fault of ['work-revoke', 'work-revoke-kill'] as const) {
      const behaviour = behaviourOf(fault);
      expect(behaviour.workOnce).toBe(true);
      expect(behaviour.clockSpreadMs).toBe(behaviour.maxClockSkewMs);
      expect(SHORT_FAULTS).not.toContain(fault);
    }
  });
});
