/** The client's settings: frozen defaults, overridden in part per client. */

export interface RetrySettings {
  /** Retries of a transient failure per call (so at most retries + 1 attempts). */
  retries: number;
  /** First pause; it doubles per retry, with full jitter, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface LockClientSettings {
  /** For acquire, renew and release, on StoreUnavailableError, LockOutcomeUnknownError, LockContentionError, other 5xx and no answer. */
  retry: RetrySettings;
  /** A held lock renews itself when this fraction of its TTL has passed since the last grant or renewal. */
  renewFraction: number;
  /**
   * The lock counts as lost this long before its lease ends by the caller's clock, unless renewed
   * (at most a quarter of the TTL): time for the work to see the signal and stop before anyone else can hold the lock.
   */
  safetyMarginMs: number;
  /** The lease the service gives a request without ttlMs (its LOCK_TTL_DEFAULT_MS): what a cap on the remaining time starts from. */
  defaultTtlMs: number;
  /** The shortest lease the service grants (its LOCK_TTL_MIN_MS): less Lambda time than this (plus the reserve) refuses before asking. */
  minTtlMs: number;
  /** Of the Lambda function's remaining time, this much is kept after the lease's end: for the release and the function's own answer. */
  deadlineReserveMs: number;
}

export type LockClientSettingsOverrides = {
  [Name in keyof LockClientSettings]?: LockClientSettings[Name] extends object ? Partial<LockClientSettings[Name]> : LockClientSettings[Name];
};

export const DEFAULT_SETTINGS: Readonly<LockClientSettings> = Object.freeze({
  retry: Object.freeze({ retries: 3, baseDelayMs: 100, maxDelayMs: 2_000 }),
  renewFraction: 1 / 3,
  safetyMarginMs: 500,
  defaultTtlMs: 30_000,
  minTtlMs: 1_000,
  deadlineReserveMs: 1_000,
});

export function resolveSettings(overrides: LockClientSettingsOverrides = {}): Readonly<LockClientSettings> {
  const settings: LockClientSettings = { ...DEFAULT_SETTINGS, ...overrides, retry: { ...DEFAULT_SETTINGS.retry, ...overrides.retry } };
  const problems: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) problems.push(problem);
  };
  check(Number.isInteger(settings.retry.retries) && settings.retry.retries >= 0, 'retry.retries must be an integer >= 0');
  check(settings.retry.baseDelayMs >= 0 && settings.retry.maxDelayMs >= settings.retry.baseDelayMs, 'retry delays must be >= 0, maxDelayMs >= baseDelayMs');
  check(settings.renewFraction > 0 && settings.renewFraction < 1, 'renewFraction must be between 0 and 1 (exclusive)');
  check(settings.safetyMarginMs >= 0, 'safetyMarginMs must be >= 0');
  check(settings.minTtlMs > 0 && settings.defaultTtlMs >= settings.minTtlMs, 'minTtlMs must be > 0 and defaultTtlMs >= minTtlMs');
  check(settings.deadlineReserveMs >= 0, 'deadlineReserveMs must be >= 0');
  if (problems.length > 0) throw new RangeError(`LockClient settings: ${problems.join('; ')}`);
  return Object.freeze({ ...settings, retry: Object.freeze(settings.retry) });
}
