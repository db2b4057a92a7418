/**
 * Faults a test asks for: the next answer of an operation lost (the call ran in the service, its
 * answer never came back), and the lock store down (every call fails as the service fails then).
 */

/** The calls of a Locker. */
export const LOCKER_OPERATIONS = ['acquire', 'renew', 'release', 'inspect', 'list'] as const;
export type LockerOperation = (typeof LOCKER_OPERATIONS)[number];

export class TestFaults {
  #lostAnswers: Array<LockerOperation | 'any'> = [];
  #storeDown = false;

  /** The next call of `operation` (of any operation by default) runs, and then its answer is lost, as a dropped connection loses it. */
  loseNextAnswer(operation: LockerOperation | 'any' = 'any'): void {
    if (operation !== 'any' && !LOCKER_OPERATIONS.includes(operation)) {
      throw new RangeError(`loseNextAnswer(operation): operation must be one of ${LOCKER_OPERATIONS.join(', ')} or any, got ${String(operation)}`);
    }
    this.#lostAnswers.push(operation);
  }

  /** Takes the lock store down (every call answers StoreUnavailableError, as the service does) or brings it back. */
  storeDown(down = true): void {
    this.#storeDown = down;
  }

  /** Whether the store is down now. */
  get isStoreDown(): boolean {
    return this.#storeDown;
  }

  /** Whether this call's answer is to be lost (and the fault used up). */
  takeLostAnswer(operation: LockerOperation): boolean {
    const at = this.#lostAnswers.findIndex((wanted) => wanted === 'any' || wanted === operation);
    if (at < 0) return false;
    this.#lostAnswers.splice(at, 1);
    return true;
  }
}
