/**
 * Arrivals in an open model, as k6's constant-arrival-rate makes them, for the engine driver.
 *
 *   arrivals   round(rate × seconds) arrivals, arrival i due at start + i / rate, every due time
 *              computed from the start (performance.now), so a late timer delays one arrival and
 *              never the ones after it; when the event loop was late every arrival already due starts
 *              at once. Node's timers fire no earlier than asked, at about 1 ms granularity: above
 *              1000 ops/s several arrivals share a tick, each started at or after its own due time,
 *              none skipped. How late arrivals started is reported (`lagsMs`): a large lag means this
 *              process, not the locks, was the limit.
 *   in flight  at most `slots` operations at once (k6's maxVUs): an arrival that finds every slot
 *              busy is dropped and counted, as k6 counts dropped_iterations. Each slot is a "VU".
 */

export interface ArrivalSchedule {
  /** Arrivals per second. */
  rate: number;
  seconds: number;
  /** Operations in flight at most (k6's maxVUs). */
  slots: number;
}

export interface ArrivalStats {
  /** Arrivals that found every slot busy. */
  dropped: number;
  /** How late each arrival started against its due time, ms. */
  lagsMs: number[];
  peakInFlight: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/**
 * Runs the schedule: each arrival that finds a free slot starts `operation(slot, started)` (slot
 * 1..slots, `started` counting the arrivals started so far from 0). `operation` must settle without
 * rejecting (its caller counts its own failures). Resolves once every started operation has ended.
 */
export async function runArrivals(schedule: ArrivalSchedule, operation: (slot: number, started: number) => Promise<void>): Promise<ArrivalStats> {
  const free = Array.from({ length: schedule.slots }, (_, i) => schedule.slots - i);
  const running = new Set<Promise<void>>();
  const lagsMs: number[] = [];
  let dropped = 0;
  let started = 0;
  let peakInFlight = 0;
  const total = Math.round(schedule.rate * schedule.seconds);
  const interval = 1000 / schedule.rate;
  const begin = performance.now();
  for (let i = 0; i < total; ) {
    for (; i < total && begin + i * interval <= performance.now(); i++) {
      lagsMs.push(performance.now() - (begin + i * interval));
      const slot = free.pop();
      if (slot === undefined) {
        dropped++;
        continue;
      }
      const run: Promise<void> = operation(slot, started++).finally(() => {
        running.delete(run);
        free.push(slot);
      });
      running.add(run);
      peakInFlight = Math.max(peakInFlight, running.size);
    }
    if (i < total) await sleep(begin + i * interval - performance.now());
  }
  await Promise.all(running);
  return { dropped, lagsMs, peakInFlight };
}
