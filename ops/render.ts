/** Output for people: aligned columns, times relative to now ("in 12s", "3s ago"), no colours. */

/** Rows under a header, each column as wide as its widest cell, two spaces between. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A span as a person says it: 850ms, 12s, 4m 5s, 2h 3m, 3d 4h. */
export function span(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(abs)}ms`;
  const seconds = Math.floor(abs / 1_000);
  if (seconds < 60) return `${seconds}s`;
  const [minutes, hours, days] = [Math.floor(seconds / 60), Math.floor(seconds / 3_600), Math.floor(seconds / 86_400)];
  if (minutes < 60) return `${minutes}m ${seconds % 60}s`;
  if (hours < 24) return `${hours}h ${minutes % 60}m`;
  return `${days}d ${hours % 24}h`;
}

/** "in 12s" for a time to come, "12s ago" for one past. */
export function relative(at: number, now: number): string {
  return at >= now ? `in ${span(at - now)}` : `${span(now - at)} ago`;
}

/** "key: value" lines, the keys aligned. */
export function fields(pairs: Array<[string, string]>): string {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${`${key}:`.padEnd(width + 1)} ${value}`).join('\n');
}

/** "1 holder", "2 holders". */
export const count = (n: number, noun: string, plural = `${noun}s`): string => `${n} ${n === 1 ? noun : plural}`;
