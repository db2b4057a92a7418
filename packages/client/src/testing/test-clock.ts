/**
 * The lock service's clock in a test: the process's own time (so a test framework's fake timers
 * move it too) plus however far the test has advanced it. Leases end, records expire and the
 * sweeper judges by this clock; your code's timers (the lock handle's renewals) keep real time.
 */
export class TestClock {
  #aheadMs = 0;

  /** Now, by the service's clock (epoch ms). */
  readonly now = (): number => Date.now() + this.#aheadMs;

  /** Moves the service's clock forward: leases and records that end meanwhile are over for it. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advance(ms): ms must be a finite number >= 0, got ${ms}`);
    this.#aheadMs += ms;
  }
}
