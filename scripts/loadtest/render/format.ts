/** How numbers read in every report: one decimal, ratios as "3.1x", saturation as a range. */
import type { Saturation } from '../summary.js';

export function round(value: number, digits = 1): string {
  if (!Number.isFinite(value)) return '-';
  return value.toFixed(digits);
}

/** "3.1x" (a relative to b); "more than" when b is 0. */
export function ratio(a: number, b: number): string {
  if (b <= 0) return a > 0 ? 'more than' : '1.0x';
  const r = a / b;
  return r >= 10 ? `${Math.round(r)}x` : `${r.toFixed(1)}x`;
}

export function describeSaturation(s: Saturation, maxLevel: number | undefined): string {
  if (!s.measured) return 'not measured (no ramp)';
  const stalls = s.shortBelow.length ? `; fell short at ${s.shortBelow.join(', ')} ops/s too (transient stall)` : '';
  if (s.saturatedAt === null) return `kept up through ${maxLevel} ops/s (highest level tried)${stalls}`;
  if (s.sustainedRate === null) return `below ${s.saturatedAt} ops/s (first level already short; peak ${round(s.peakGoodputRate)} ops/s)`;
  return `between ${s.sustainedRate} and ${s.saturatedAt} ops/s (peak goodput ${round(s.peakGoodputRate)} ops/s)${stalls}`;
}

export function saturationCell(s: Saturation, maxLevel: number | undefined): string {
  if (!s.measured) return '-';
  const mark = s.shortBelow.length ? ' *' : '';
  if (s.saturatedAt === null) return `> ${maxLevel} (not reached)${mark}`;
  if (s.sustainedRate === null) return `< ${s.saturatedAt}`;
  return `${s.sustainedRate}-${s.saturatedAt}${mark}`;
}
