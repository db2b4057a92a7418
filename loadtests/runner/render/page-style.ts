/**
 * The reports' page: at most 1,100 px of text, and nothing wider than the window (a 1,300 px one
 * never scrolls sideways): tables, charts and preformatted blocks shrink or wrap, long words
 * (paths, URLs) break anywhere.
 */
export const PAGE_STYLE = `*, *::before, *::after { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 2rem auto; padding: 0 1rem; max-width: 1100px; color: #222; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 13px; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 4px 6px; text-align: right; overflow-wrap: anywhere; }
th:first-child, td:first-child { text-align: left; }
th { background: #f6f6f6; }
pre { font-size: 12px; max-width: 100%; white-space: pre-wrap; overflow-wrap: anywhere; }
svg, img { max-width: 100%; height: auto; }
.chart { margin: 1rem 0; max-width: 100%; }`;
