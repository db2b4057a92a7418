/** The client's settings (frozen defaults, partial overrides, checked) and how a lease is fitted into a Lambda function's remaining time. */
import { DEFAULT_SETTINGS, InsufficientTimeError, resolveSettings } from '@es-lease-locks/client';
import { describe, expect, it } from 'vitest';
import { fitAcquire, fitRenewal } from '../../packages/client/src/remaining-time.js';

describe('settings', () => {
  it('defaults are frozen, down to the retry settings', () => {
    expect(Object.isFrozen(DEFAULT_SETTINGS)).toBe(true);
    expect(Object.isFrozen(DEFAULT_SETTINGS.retry)).toBe(true);
    expect(DEFAULT_SETTINGS).toMatchObject({ renewFraction: 1 / 3, safetyMarginMs: 500, minTtlMs: 1_000, deadlineReserveMs: 1_000 });
  });

  it('overrides replace only what they name, nested ones too', () => {
    const settings = resolveSettings({ renewFraction: 0.5, retry: { retries: 0 } });
    expect(settings).toMatchObject({ renewFraction: 0.5, safetyMarginMs: 500, retry: { retries: 0, baseDelayMs: 100, maxDelayMs: 2_000 } });
    expect(Object.isFrozen(settings.retry)).toBe(true);
  });

  it('refuses settings that make no sense, naming each', () => {
    expect(() => resolveSettings({ renewFraction: 1, retry: { retries: -1 } })).toThrow(/retry\.retries.*renewFraction/);
  });
});

describe('fitting a lease into the remaining time (reserve 1 s, shortest lease 1 s, default TTL 30 s)', () => {
  const left = (ms: number) => () => ms;

  it('plenty of time: the request as it is', () => {
    expect(fitAcquire({ ttlMs: 10_000, waitMs: 2_000 }, left(60_000), DEFAULT_SETTINGS)).toEqual({ ttlMs: 10_000, waitMs: 2_000 });
    expect(fitAcquire({}, left(60_000), DEFAULT_SETTINGS)).toEqual({});
  });

  it('the wait is kept while the shortest lease fits after it; the lease gets the rest', () => {
    expect(fitAcquire({ ttlMs: 30_000, waitMs: 3_000 }, left(6_000), DEFAULT_SETTINGS)).toEqual({ ttlMs: 2_000, waitMs: 3_000 });
    expect(fitAcquire({ waitMs: 9_000 }, left(6_000), DEFAULT_SETTINGS)).toEqual({ ttlMs: 1_000, waitMs: 4_000 });
    // No TTL asked: the service's default would not fit, so one is set.
    expect(fitAcquire({}, left(10_000), DEFAULT_SETTINGS)).toEqual({ ttlMs: 9_000 });
  });

  it('too little time: refused, saying how much was left', () => {
    expect(() => fitAcquire({ ttlMs: 5_000 }, left(1_999), DEFAULT_SETTINGS)).toThrow(InsufficientTimeError);
    expect(fitAcquire({ ttlMs: 5_000 }, left(2_000), DEFAULT_SETTINGS)).toEqual({ ttlMs: 1_000 });
    expect(fitRenewal(5_000, left(3_000), DEFAULT_SETTINGS)).toBe(2_000);
    expect(() => fitRenewal(5_000, left(1_500), DEFAULT_SETTINGS)).toThrow(/500 ms after the 1000 ms reserve/);
  });
});
