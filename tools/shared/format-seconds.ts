/** How long a run took or has left, as progress lines say it: "4 min 05 s", or "42 s" under a minute. */
export function formatSeconds(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  return whole >= 60 ? `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, '0')} s` : `${whole} s`;
}
