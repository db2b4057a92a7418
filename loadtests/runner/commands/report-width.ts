/**
 * npm run loadtest:report-width -- <report.html>: renders a report in headless Chromium at a given
 * window width and says whether it scrolls sideways (the page's scrollWidth against the window), with
 * a screenshot beside the report. Chromium is Debian's (`apt-get install chromium`); nothing here
 * downloads a browser.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { which } from '../../../infra/lib/which.js';
import { parseFlags, printHelp, UsageError } from '../../../tools/cli/flags.js';
import { runCli } from '../../../tools/cli/run-cli.js';

const run = promisify(execFile);

const USAGE = `usage: npm run loadtest:report-width -- REPORT.html [--width PX]

Renders REPORT.html in headless Chromium (/usr/bin/chromium: apt-get install chromium) at --width
pixels (default 1300) and prints the page's width: it fits when nothing is wider than the window.
Writes REPORT-<width>.png beside the report.
Exit codes: 0 it fits, 1 it scrolls sideways (or Chromium failed), 2 a usage mistake.`;

/** Chromium without the background traffic this machine's closed network refuses. */
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

runCli(async (argv) => {
  const { values, positionals } = parseFlags(argv, { width: { type: 'string' } }, { positionals: true });
  if (printHelp(values, USAGE)) return 0;
  const [report] = positionals;
  if (!report || positionals.length > 1) throw new UsageError('give one report, e.g. results/<run>/report.html');
  const width = Number(values.width ?? 1300);
  if (!Number.isInteger(width) || width < 320 || width > 4000) throw new UsageError('--width: must be an integer between 320 and 4000');
  const chromium = which('chromium') ?? which('chromium-browser');
  if (!chromium) throw new Error('no chromium on PATH: apt-get install chromium');

  const measured = await scrollWidth(chromium, resolve(report), width);
  const screenshot = join(dirname(resolve(report)), `${basename(report, '.html')}-${width}.png`);
  await run(chromium, [...CHROMIUM_FLAGS, `--window-size=${width},2400`, `--screenshot=${screenshot}`, `file://${resolve(report)}`]);
  const fits = measured <= width;
  console.log(`${report}: ${measured} px wide at a ${width} px window: ${fits ? 'fits' : 'scrolls sideways'}; screenshot ${screenshot}`);
  return fits ? 0 : 1;
});

/** The page's scrollWidth, written into the DOM by a script appended to a copy of the report (Chromium's --dump-dom prints the DOM after scripts ran). */
async function scrollWidth(chromium: string, report: string, width: number): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'report-width-'));
  try {
    const copy = join(dir, basename(report));
    await copyFile(report, copy);
    const probe = `<script>window.addEventListener('load',()=>{document.body.setAttribute('data-scroll-width',String(document.documentElement.scrollWidth))})</script>`;
    await writeFile(copy, `${await readFile(copy, 'utf8')}${probe}`);
    const { stdout } = await run(chromium, [...CHROMIUM_FLAGS, `--window-size=${width},2400`, '--virtual-time-budget=5000', '--dump-dom', `file://${copy}`], {
      maxBuffer: 64 * 1024 * 1024,
    });
    const found = /data-scroll-width="(\d+)"/.exec(stdout);
    if (!found) throw new Error('Chromium rendered the report but the width probe did not run');
    return Number(found[1]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
