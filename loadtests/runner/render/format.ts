/** How numbers read in every report: one decimal, ratios as "3.1x". */

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
