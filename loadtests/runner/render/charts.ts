/** Hand-made SVG charts (no chart library): a line chart and a grouped bar chart. */

export const GRANULARITY_COLORS: Record<string, string> = {
  global: '#d62728',
  document: '#1f77b4',
  tree: '#2ca02c',
};
const FALLBACK_COLORS = ['#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

/**
 * Width of one character of the charts' font as a share of its size: system-ui averages about 0.55
 * of the font size per character; bold and wide letters push it up, so text is measured a little wide.
 */
const CHAR_EM = 0.6;
const TITLE_SIZE = 16;
const SUBTITLE_SIZE = 13;
/** Space kept free on each side of the title, px. */
const TITLE_PAD = 12;

/** `text` in lines of whole words that each fit `maxWidth` at `fontSize` (a single longer word stays whole). */
export function wrapText(text: string, fontSize: number, maxWidth: number): string[] {
  const maxChars = Math.max(1, Math.floor(maxWidth / (fontSize * CHAR_EM)));
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > maxChars) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * The title (bold) and subtitle (grey) of a chart, centred and wrapped to the chart's width, and the
 * y below which the plot may start. A title wider than the chart was cut off at both ends.
 */
function chartHeader(title: string, subtitle: string | undefined, width: number): { parts: string[]; bottom: number } {
  const maxWidth = width - 2 * TITLE_PAD;
  const lines = [
    ...wrapText(title, TITLE_SIZE, maxWidth).map((text) => ({ text, size: TITLE_SIZE, style: 'font-weight="600"' })),
    ...(subtitle ? wrapText(subtitle, SUBTITLE_SIZE, maxWidth).map((text) => ({ text, size: SUBTITLE_SIZE, style: 'fill="#555"' })) : []),
  ];
  const parts: string[] = [];
  let y = 6;
  for (const line of lines) {
    y += Math.round(line.size * 1.25);
    parts.push(
      `<text class="title" x="${width / 2}" y="${y}" text-anchor="middle" font-size="${line.size}" ${line.style} ${FONT}>${escapeXml(line.text)}</text>`,
    );
  }
  return { parts, bottom: y };
}

/** The top margin of a chart with this header: the plot starts 22 px under the header's last line. */
function headerMargin(title: string, subtitle: string | undefined, width: number): number {
  return chartHeader(title, subtitle, width).bottom + 22;
}

/** The SVG opening, background, title and horizontal grid with y labels that every chart shares. */
function chartFrame(frame: {
  width: number;
  height: number;
  title: string;
  subtitle: string | undefined;
  left: number;
  plotW: number;
  yTicks: number[];
  sy: (y: number) => number;
}): string[] {
  const { width, height, title, subtitle, left, plotW } = frame;
  const label = subtitle ? `${title} (${subtitle})` : title;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(label)}">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    ...chartHeader(title, subtitle, width).parts,
  ];
  for (const tick of frame.yTicks) {
    const y = frame.sy(tick).toFixed(1);
    parts.push(`<line x1="${left}" y1="${y}" x2="${left + plotW}" y2="${y}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${left - 8}" y="${y}" dy="4" text-anchor="end" font-size="12" fill="#444" ${FONT}>${formatTick(tick)}</text>`);
  }
  return parts;
}

export function colorFor(name: string, index: number): string {
  return GRANULARITY_COLORS[name] ?? FALLBACK_COLORS[index % FALLBACK_COLORS.length]!;
}

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** About `count` round tick values from 0 to at least `max`. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let value = 0; value < max + step * 0.999; value += step) ticks.push(Number(value.toPrecision(12)));
  return ticks;
}

function formatTick(value: number): string {
  if (value >= 1000) return `${Math.round(value / 100) / 10}k`;
  return String(Number(value.toPrecision(4)));
}

export interface LineSeries {
  name: string;
  points: Array<{ x: number; y: number }>;
  color?: string;
  dashed?: boolean;
}

export interface LineChartOptions {
  title: string;
  /** A smaller second line under the title: what was measured, how to read it. */
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  series: LineSeries[];
  width?: number;
  height?: number;
}

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

interface Margin {
  top: number;
  right: number;
  bottom: number;
  left: number;
}

function plotSize(width: number, height: number, margin: Margin): { plotW: number; plotH: number } {
  return { plotW: width - margin.left - margin.right, plotH: height - margin.top - margin.bottom };
}

/** The y axis title, turned to run along the axis, centred at `y`. */
function yAxisLabel(label: string, y: number): string {
  return `<text x="18" y="${y}" text-anchor="middle" font-size="13" transform="rotate(-90 18 ${y})" ${FONT}>${escapeXml(label)}</text>`;
}

export function lineChart(options: LineChartOptions): string {
  const width = options.width ?? 720;
  const height = options.height ?? 420;
  const margin = { top: headerMargin(options.title, options.subtitle, width), right: 150, bottom: 56, left: 70 };
  const { plotW, plotH } = plotSize(width, height, margin);
  const all = options.series.flatMap((s) => s.points).filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  const xTicks = niceTicks(Math.max(1, ...all.map((p) => p.x)));
  const yTicks = niceTicks(Math.max(1, ...all.map((p) => p.y)));
  const xMax = xTicks[xTicks.length - 1]!;
  const yMax = yTicks[yTicks.length - 1]!;
  const sx = (x: number): number => margin.left + (x / xMax) * plotW;
  const sy = (y: number): number => margin.top + plotH - (y / yMax) * plotH;
  const parts = chartFrame({ width, height, title: options.title, subtitle: options.subtitle, left: margin.left, plotW, yTicks, sy });
  for (const tick of xTicks) {
    const x = sx(tick).toFixed(1);
    parts.push(`<line x1="${x}" y1="${margin.top}" x2="${x}" y2="${margin.top + plotH}" stroke="#f0f0f0"/>`);
    parts.push(`<text x="${x}" y="${margin.top + plotH + 18}" text-anchor="middle" font-size="12" fill="#444" ${FONT}>${formatTick(tick)}</text>`);
  }
  parts.push(`<line x1="${margin.left}" y1="${margin.top + plotH}" x2="${margin.left + plotW}" y2="${margin.top + plotH}" stroke="#333"/>`);
  parts.push(`<line x1="${margin.left}" y1="${margin.top}" x2="${margin.left}" y2="${margin.top + plotH}" stroke="#333"/>`);
  parts.push(`<text x="${margin.left + plotW / 2}" y="${height - 14}" text-anchor="middle" font-size="13" ${FONT}>${escapeXml(options.xLabel)}</text>`);
  parts.push(yAxisLabel(options.yLabel, margin.top + plotH / 2));
  options.series.forEach((series, index) => {
    const color = series.color ?? colorFor(series.name, index);
    const points = series.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)).sort((a, b) => a.x - b.x);
    if (points.length === 0) return;
    const coords = points.map((p) => `${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
    parts.push(
      `<polyline class="series" data-series="${escapeXml(series.name)}" points="${coords}" fill="none" stroke="${color}" stroke-width="2.5"${series.dashed ? ' stroke-dasharray="6 5"' : ''}/>`,
    );
    if (!series.dashed) {
      for (const p of points) {
        parts.push(
          `<circle cx="${sx(p.x).toFixed(1)}" cy="${sy(p.y).toFixed(1)}" r="3.5" fill="${color}"><title>${escapeXml(`${series.name}: ${formatTick(p.x)} -> ${p.y.toFixed(1)}`)}</title></circle>`,
        );
      }
    }
    const ly = margin.top + 10 + index * 22;
    const lx = margin.left + plotW + 16;
    parts.push(
      `<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${color}" stroke-width="2.5"${series.dashed ? ' stroke-dasharray="6 5"' : ''}/>`,
    );
    parts.push(`<text x="${lx + 30}" y="${ly}" dy="4" font-size="13" ${FONT}>${escapeXml(series.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

export interface BarChartOptions {
  title: string;
  /** A smaller second line under the title: what was measured, how to read it. */
  subtitle?: string;
  yLabel: string;
  /** One group per category (e.g. a granularity); a warning is printed in red under its name. */
  groups: Array<{ name: string; values: number[]; warning?: string; color?: string }>;
  /** Names of the bars in every group (e.g. p50, p95, p99). */
  bars: string[];
  /** Color per group (true) or per bar (false). */
  colorByGroup?: boolean;
  /** Error bars: per group, per bar, the range over trials (drawn as a whisker from min to max). */
  ranges?: Array<Array<{ min: number; max: number } | undefined>>;
  width?: number;
  height?: number;
}

export function barChart(options: BarChartOptions): string {
  const width = options.width ?? 720;
  const height = options.height ?? 380;
  const margin = { top: headerMargin(options.title, options.subtitle, width), right: 24, bottom: 64, left: 70 };
  const { plotW, plotH } = plotSize(width, height, margin);
  const values = [...options.groups.flatMap((g) => g.values), ...(options.ranges ?? []).flat().map((range) => range?.max ?? 0)].filter(Number.isFinite);
  const yTicks = niceTicks(Math.max(1, ...values));
  const yMax = yTicks[yTicks.length - 1]!;
  const sy = (y: number): number => margin.top + plotH - (Math.max(0, y) / yMax) * plotH;
  const groupW = plotW / Math.max(1, options.groups.length);
  const barW = (groupW * 0.7) / Math.max(1, options.bars.length);
  const shades = ['0.45', '0.7', '1'];
  const parts = chartFrame({ width, height, title: options.title, subtitle: options.subtitle, left: margin.left, plotW, yTicks, sy });
  parts.push(`<line x1="${margin.left}" y1="${margin.top + plotH}" x2="${margin.left + plotW}" y2="${margin.top + plotH}" stroke="#333"/>`);
  parts.push(yAxisLabel(options.yLabel, margin.top + plotH / 2));
  options.groups.forEach((group, gi) => {
    const gx = margin.left + gi * groupW + groupW * 0.15;
    const color = group.color ?? colorFor(group.name, gi);
    group.values.forEach((value, bi) => {
      if (!Number.isFinite(value)) return;
      const x = gx + bi * barW;
      const y = sy(value);
      const fill = options.colorByGroup === false ? colorFor(options.bars[bi] ?? '', bi) : color;
      const opacity = options.colorByGroup === false ? '1' : (shades[bi] ?? '1');
      parts.push(
        `<rect class="bar" x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barW - 3).toFixed(1)}" height="${(margin.top + plotH - y).toFixed(1)}" fill="${fill}" fill-opacity="${opacity}"><title>${escapeXml(`${group.name} ${options.bars[bi] ?? ''}: ${value.toFixed(1)}`)}</title></rect>`,
      );
      const range = options.ranges?.[gi]?.[bi];
      const mid = x + (barW - 3) / 2;
      if (range && Number.isFinite(range.min) && Number.isFinite(range.max) && range.max > range.min) {
        const [top, bottom] = [sy(range.max), sy(range.min)];
        parts.push(
          `<g class="error-bar" stroke="#222" stroke-width="1.5"><line x1="${mid.toFixed(1)}" y1="${top.toFixed(1)}" x2="${mid.toFixed(1)}" y2="${bottom.toFixed(1)}"/>` +
            `<line x1="${(mid - 5).toFixed(1)}" y1="${top.toFixed(1)}" x2="${(mid + 5).toFixed(1)}" y2="${top.toFixed(1)}"/>` +
            `<line x1="${(mid - 5).toFixed(1)}" y1="${bottom.toFixed(1)}" x2="${(mid + 5).toFixed(1)}" y2="${bottom.toFixed(1)}"/>` +
            `<title>${escapeXml(`${group.name} ${options.bars[bi] ?? ''}: ${range.min.toFixed(1)}-${range.max.toFixed(1)}`)}</title></g>`,
        );
      }
      const labelY = Math.min(y, range ? sy(range.max) : y) - 4;
      parts.push(
        `<text x="${mid.toFixed(1)}" y="${labelY.toFixed(1)}" text-anchor="middle" font-size="10" fill="#333" ${FONT}>${formatTick(Math.round(value * 10) / 10)}</text>`,
      );
      parts.push(
        `<text x="${(x + (barW - 3) / 2).toFixed(1)}" y="${margin.top + plotH + 14}" text-anchor="middle" font-size="10" fill="#666" ${FONT}>${escapeXml(options.bars[bi] ?? '')}</text>`,
      );
    });
    parts.push(
      `<text x="${(gx + (groupW * 0.7) / 2).toFixed(1)}" y="${margin.top + plotH + 34}" text-anchor="middle" font-size="13" font-weight="600" ${FONT}>${escapeXml(group.name)}</text>`,
    );
    if (group.warning) {
      parts.push(
        `<text class="warning" x="${(gx + (groupW * 0.7) / 2).toFixed(1)}" y="${margin.top + plotH + 50}" text-anchor="middle" font-size="11" fill="#b00020" ${FONT}>${escapeXml(group.warning)}</text>`,
      );
    }
  });
  parts.push('</svg>');
  return parts.join('\n');
}
