/**
 * Clock skew: each client's engine reads a clock that is off the real one by a fixed offset. The
 * engine assumes any two callers differ by at most maxClockSkewMs, so offsets spread over a range of
 * that width (half ahead, half behind) are within the assumption: the extreme two differ by exactly
 * the bound. A range five times as wide breaks it, which is what clock-skew-beyond shows.
 */

/** `clients` offsets spread evenly over [-spreadMs/2, +spreadMs/2], in ms; all 0 without a spread. */
export function clockOffsets(clients: number, spreadMs: number): number[] {
  if (clients <= 1 || spreadMs === 0) return Array.from({ length: clients }, () => 0);
  // Alternate ahead and behind, so that a run with few clients still has both.
  const evenly = Array.from({ length: clients }, (_, index) => Math.round(-spreadMs / 2 + (spreadMs * index) / (clients - 1)));
  return evenly.map((_, index) => evenly[index % 2 === 0 ? index / 2 : clients - 1 - (index - 1) / 2]!);
}

/** The engine's clock for a client `offsetMs` off the real one. */
export const skewedClock =
  (offsetMs: number): (() => number) =>
  () =>
    Date.now() + offsetMs;
