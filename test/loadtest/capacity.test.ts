/** The capacity search, against services whose true capacity is known (no k6 needed). */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SEARCH, searchCapacity } from '../../loadtests/runner/capacity.js';
import { DEFAULT_OBJECTIVE, judge, type ProbeVerdict } from '../../loadtests/shared/objective.js';

/** A service that keeps up to `capacity` ops/s and then falls behind; `noise` flips verdicts near the edge. */
function service(capacity: number) {
  const rates: number[] = [];
  const probe = async (rate: number): Promise<ProbeVerdict> => {
    rates.push(rate);
    const goodputRate = rate <= capacity ? rate : capacity * 0.9;
    return judge({ rate, goodputRate, acquireP99: rate <= capacity ? 80 : 900, errorRate: 0, dropped: 0 }, DEFAULT_OBJECTIVE);
  };
  return { probe, rates };
}

describe('capacity search', () => {
  it('finds the capacity to within 5%, not a rung of a ladder', async () => {
    for (const truth of [7, 57, 163, 300, 611]) {
      const { probe } = service(truth);
      const result = await searchCapacity(probe);
      expect(result.capacity, `truth ${truth}`).toBeLessThanOrEqual(truth);
      expect(result.capacity, `truth ${truth}`).toBeGreaterThanOrEqual(Math.floor(truth / (1 + DEFAULT_SEARCH.resolution)) - 1);
      expect(result.failedAt, `truth ${truth}`).toBeGreaterThan(truth);
      expect(result.truncated).toBe(false);
    }
  });

  it('reports the rate it failed at, and every probe in order', async () => {
    const { probe, rates } = service(100);
    const result = await searchCapacity(probe);
    expect(rates.slice(0, 3)).toEqual([40, 80, 160]);
    expect(result.probes.map((p) => p.rate)).toEqual(rates);
    expect(result.probes.filter((p) => !p.good).every((p) => p.reasons.length > 0)).toBe(true);
  });

  it('starts from an earlier bracket, checking both ends, and needs fewer probes', async () => {
    const first = await searchCapacity(service(163).probe);
    const again = service(163);
    const second = await searchCapacity(again.probe, DEFAULT_SEARCH, { good: first.capacity, bad: first.failedAt });
    expect(second.capacity).toBe(first.capacity);
    expect(again.rates.length).toBeLessThan(first.probes.length);
  });

  it('moves off a stale bracket when the service got slower', async () => {
    const slower = service(90);
    const result = await searchCapacity(slower.probe, DEFAULT_SEARCH, { good: 160, bad: 170 });
    expect(result.capacity).toBeLessThanOrEqual(90);
    expect(result.capacity).toBeGreaterThanOrEqual(85);
  });

  it('a search from a bracket stops after its own, smaller budget, with the rates it met and missed', async () => {
    const moved = service(300);
    const result = await searchCapacity(moved.probe, DEFAULT_SEARCH, { good: 78, bad: 80 });
    expect(result.probes).toHaveLength(DEFAULT_SEARCH.maxProbesFromBracket);
    expect(result.truncated).toBe(true);
    expect(result.capacity).toBeLessThanOrEqual(300);
    expect(result.failedAt).toBeGreaterThan(300);
  });

  it('says 0 when nothing is sustained, and "at least the maximum" when everything is', async () => {
    const none = await searchCapacity(async (rate) => judge({ rate, goodputRate: 0, acquireP99: 5_000, errorRate: 1, dropped: rate }, DEFAULT_OBJECTIVE));
    expect(none.capacity).toBe(0);
    const all = await searchCapacity(service(1e9).probe);
    expect(all.capacity).toBe(DEFAULT_SEARCH.maxRate);
    expect(all.failedAt).toBeNull();
  });

  it('a probe fails on any part of the objective: goodput, p99 or errors', () => {
    const ok = { rate: 100, goodputRate: 99, acquireP99: 100, errorRate: 0, dropped: 0 };
    expect(judge(ok, DEFAULT_OBJECTIVE).good).toBe(true);
    expect(judge({ ...ok, goodputRate: 90 }, DEFAULT_OBJECTIVE).reasons).toEqual(['goodput 90.0 < 95% of 100 ops/s']);
    expect(judge({ ...ok, acquireP99: 251 }, DEFAULT_OBJECTIVE).reasons).toEqual(['acquire p99 251 ms > 250 ms']);
    expect(judge({ ...ok, errorRate: 0.02 }, DEFAULT_OBJECTIVE).reasons).toEqual(['2.0% errors']);
  });

  it('one stall does not set the capacity: a marginal p99 miss is probed again and counts only if it repeats', async () => {
    // Sustains 100 ops/s, but the first probe at 40 ops/s catches a stall (p99 just over the objective).
    const stalledService = () => {
      const seen: number[] = [];
      const probe = async (rate: number): Promise<ProbeVerdict> => {
        seen.push(rate);
        const stall = rate === 40 && seen.filter((r) => r === 40).length === 1;
        const acquireP99 = stall ? 377 : rate <= 100 ? 80 : 900;
        return judge({ rate, goodputRate: rate <= 100 ? rate : 90, acquireP99, errorRate: 0, dropped: 0 }, DEFAULT_OBJECTIVE);
      };
      return { probe, seen };
    };
    const confirmed = stalledService();
    const result = await searchCapacity(confirmed.probe);
    expect(confirmed.seen.slice(0, 3)).toEqual([40, 40, 80]);
    expect(result.capacity).toBeGreaterThanOrEqual(95);
    expect(result.capacity).toBeLessThanOrEqual(100);

    const without = await searchCapacity(stalledService().probe, { ...DEFAULT_SEARCH, confirmMarginalMisses: false });
    expect(without.capacity).toBeLessThan(40);
  });

  it('a marginal miss that repeats is a miss; an overloaded probe is not probed again', async () => {
    const slowTail = async (rate: number): Promise<ProbeVerdict> =>
      judge({ rate, goodputRate: rate, acquireP99: rate <= 60 ? 100 : 300, errorRate: 0, dropped: 0 }, DEFAULT_OBJECTIVE);
    const repeated = await searchCapacity(slowTail);
    expect(repeated.capacity).toBeGreaterThanOrEqual(57);
    expect(repeated.capacity).toBeLessThanOrEqual(60);
    expect(repeated.failedAt).toBeGreaterThan(60);

    const { probe, rates } = service(100);
    await searchCapacity(probe);
    expect(new Set(rates).size).toBe(rates.length);
  });

  it('a probe is marginal when only its p99 missed, by less than twice the objective', () => {
    const ok = { rate: 100, goodputRate: 99, acquireP99: 100, errorRate: 0, dropped: 0 };
    expect(judge({ ...ok, acquireP99: 400 }, DEFAULT_OBJECTIVE).marginal).toBe(true);
    expect(judge({ ...ok, acquireP99: 500 }, DEFAULT_OBJECTIVE).marginal).toBe(false);
    expect(judge({ ...ok, acquireP99: 400, goodputRate: 80 }, DEFAULT_OBJECTIVE).marginal).toBe(false);
    expect(judge(ok, DEFAULT_OBJECTIVE).marginal).toBe(false);
  });

  it('stops at the probe budget and says so', async () => {
    const result = await searchCapacity(service(1000).probe, { ...DEFAULT_SEARCH, maxProbes: 3 });
    expect(result.probes).toHaveLength(3);
    expect(result.truncated).toBe(true);
  });
});
