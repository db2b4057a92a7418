import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCli, parseMix, parseSkew, renameSweep } from '../../loadtests/runner/cli.js';
import { defaultConfig, granularitySeconds, plannedSeconds } from '../../loadtests/runner/config.js';
import { ConfigError } from '../../loadtests/runner/config-error.js';
import { parseGoVersion } from '../../loadtests/runner/k6-binary.js';
import { dashboardEnv } from '../../loadtests/runner/k6-process.js';
import { barChart, lineChart, niceTicks, wrapText } from '../../loadtests/runner/render/charts.js';
import { renderHtml } from '../../loadtests/runner/render/html.js';
import { renderMarkdown } from '../../loadtests/runner/render/markdown.js';
import { crossWorkloadNote, flipPoints, recommend } from '../../loadtests/runner/render/recommendation.js';
import { capacityChart, goodputChart } from '../../loadtests/runner/render/result-charts.js';
import { extractResult, type GranularityResult, type K6Summary, normalizeK6Summary, saturationOf } from '../../loadtests/runner/summary.js';
import type { Granularity } from '../../loadtests/shared/workload.js';
import { UsageError } from '../../tools/cli/flags.js';

describe('config', () => {
  it('defaults fit in ten minutes with the stack start: three interleaved trials, a capacity search each', () => {
    const config = defaultConfig();
    expect(config.trials).toBe(3);
    expect(config.capacity.enabled).toBe(true);
    expect(plannedSeconds(config)).toBeLessThanOrEqual(9 * 60);
    expect(config.schedule.steady.rate).toBeLessThanOrEqual(300);
    expect(config.schedule.ramp.levels).toEqual([]);
  });

  it('takes the capacity flags: trials, the p99 objective, probe length, the search maximum', () => {
    const { config } = parseCli(['--trials', '5', '--slo-p99', '120', '--probe-seconds', '4', '--max-rate', '500']);
    expect(config.trials).toBe(5);
    expect(config.capacity).toMatchObject({ probeS: 4, objective: { p99Ms: 120 }, search: { maxRate: 500 } });
    expect(parseCli(['--no-search']).config.capacity.enabled).toBe(false);
    expect(parseCli(['--smoke']).config.trials).toBe(1);
    expect(() => parseCli(['--trials', '0'])).toThrow(/trials must be 1\.\.20/);
  });

  it('parses flags over a JSON config file, with --smoke shortening the schedule', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lt-config-'));
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        strategies: ['global', 'tree'],
        workload: { criticalSectionMs: 5 },
        workloads: [
          { name: 'light', mix: { rename: 1 } },
          { name: 'renames', mix: { rename: 30 } },
        ],
        steady: { rate: 70 },
        retry: { budgetMs: 1000 },
      }),
    );
    const { config } = parseCli(['--config', file, '--rate', '55', '--skew', 'zipf:1.3', '--levels', '10,30']);
    expect(config.granularities).toEqual(['global', 'tree']);
    expect(config.workloads.map((w) => [w.name, w.mix.rename, w.criticalSectionMs])).toEqual([
      ['light', 1, 5],
      ['renames', 30, 5],
    ]);
    expect(config.workloads.every((w) => w.skew.kind === 'zipf')).toBe(true);
    expect(config.schedule.steady.rate).toBe(55);
    expect(config.schedule.ramp.levels).toEqual([10, 30]);
    expect(config.retry.budgetMs).toBe(1000);

    const smoke = parseCli(['--smoke', '--target', 'http://example.test:3000/']).config;
    expect(smoke.smoke).toBe(true);
    expect(smoke.target).toBe('http://example.test:3000');
    expect(granularitySeconds(smoke.schedule)).toBeLessThanOrEqual(15);
  });

  it('rejects bad input with readable messages', () => {
    expect(() => parseCli(['--strategies', 'global,row'])).toThrow(/unknown granularity "row"/);
    expect(() => parseCli(['--levels', '50,20'])).toThrow(/ramp levels must increase/);
    expect(() => parseCli(['--depth', '5', '--fanout', '4', '--files', '10'])).toThrow(ConfigError);
    expect(() => parseCli(['--mix', 'lots'])).toThrow(/--mix/);
    expect(() => parseCli(['--bogus'])).toThrow();
  });

  it('--granularities, or --strategies, picks the granularities; the config file takes either key, never both', () => {
    expect(parseCli(['--granularities', 'tree,document']).config.granularities).toEqual(['tree', 'document']);
    expect(parseCli(['--strategies', 'global']).config.granularities).toEqual(['global']);
    expect(() => parseCli(['--granularities', 'tree', '--strategies', 'global'])).toThrow(/^--granularities and --strategies: two names of one flag/);
    expect(() => parseCli(['--granularities', 'tree,'])).toThrow(
      /^--granularities: an empty item in "tree,": expected granularity names separated by commas \(global, document, tree\)/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'lt-config-'));
    const file = (name: string, json: unknown): string => {
      writeFileSync(join(dir, name), JSON.stringify(json));
      return join(dir, name);
    };
    expect(parseCli(['--config', file('new.json', { granularities: ['document'] })]).config.granularities).toEqual(['document']);
    expect(() => parseCli(['--config', file('both.json', { granularities: ['document'], strategies: ['tree'] })])).toThrow(/two names of one setting/);
  });

  it('--store picks the lock store; any other value is a usage mistake naming the flag and the rule', () => {
    expect(parseCli(['--store', 'opensearch', '--smoke']).config.store).toBe('opensearch');
    expect(parseCli(['--store', 'elasticsearch']).config.store).toBe('elasticsearch');
    expect(() => parseCli(['--store', 'os'])).toThrow(UsageError);
    expect(() => parseCli(['--store', 'os'])).toThrow(/^--store: must be elasticsearch or opensearch \(got "os"\)$/);
  });

  it('refuses a config file with unknown keys or wrong types, naming the place', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'lt-config-')), 'config.json');
    writeFileSync(file, JSON.stringify({ stedy: { rate: 5 }, ramp: { levels: [10, 'x'] } }));
    expect(() => parseCli(['--config', file])).toThrow(ConfigError);
    expect(() => parseCli(['--config', file])).toThrow(/Unrecognized key: "stedy"/);
    expect(() => parseCli(['--config', file])).toThrow(/config\.json ramp\.levels\.1: /);
    writeFileSync(file, JSON.stringify({ target: 'https://stage.example/', workload: { skew: { kind: 'zipf' } } }));
    const { config } = parseCli(['--config', file]);
    expect(config.target).toBe('https://stage.example');
    expect(config.workloads[0]!.skew).toEqual({ kind: 'zipf', s: 1 });
  });

  it('parses mixes and skews', () => {
    expect(parseMix('70/25/5')).toEqual({ read: 70, edit: 25, rename: 5 });
    expect(parseMix('read=1,edit=2,rename=3')).toEqual({ read: 1, edit: 2, rename: 3, create: 0, delete: 0 });
    expect(parseMix('67/23/5/3/2')).toEqual({ read: 67, edit: 23, rename: 5, create: 3, delete: 2 });
    expect(parseMix('rename=1,create=4')).toEqual({ read: 0, edit: 0, rename: 1, create: 4, delete: 0 });
    expect(() => parseMix('70/25')).toThrow(/--mix "70\/25": expected read\/edit\/rename\[\/create\/delete\]/);
    expect(() => parseMix('read=1,read=2')).toThrow(/--mix/);
    expect(parseSkew('uniform')).toEqual({ kind: 'uniform' });
    expect(parseSkew('zipf')).toEqual({ kind: 'zipf', s: 1 });
    expect(parseSkew('hotspot:0.2:0.8')).toEqual({ kind: 'hotspot', hotFraction: 0.2, hotTraffic: 0.8 });
  });

  it('reads go versions', () => {
    expect(parseGoVersion('go version go1.26.8 linux/amd64')).toEqual([1, 26]);
    expect(parseGoVersion('go version go1.24 linux/amd64')).toEqual([1, 24]);
    expect(parseGoVersion('nonsense')).toBeUndefined();
  });
});

/** A k6 summary as handleSummary writes it, for one granularity. */
function summary(steady: { goodput: number; offered: number; p95: number; conflicts?: number }, ramp: Record<number, number>, errorsRate = 0): K6Summary {
  const metrics: K6Summary['metrics'] = {
    'goodput{stage:steady}': { values: { count: steady.goodput } },
    'ops_offered{stage:steady}': { values: { count: steady.offered } },
    'conflicts{stage:steady}': { values: { count: steady.conflicts ?? 0 } },
    'conflict_rate{stage:steady}': { values: { rate: 0.25 } },
    'acquire_latency{stage:steady}': { values: { med: steady.p95 / 3, 'p(95)': steady.p95, 'p(99)': steady.p95 * 2, count: steady.goodput } },
    'dropped_iterations{scenario:steady}': { values: { count: 0 } },
    errors: { values: { rate: errorsRate }, thresholds: { 'rate<0.01': { ok: errorsRate < 0.01 } } },
  };
  for (const [level, goodput] of Object.entries(ramp)) {
    metrics[`goodput{stage:r${level}}`] = { values: { count: goodput * 5 } };
    metrics[`acquire_latency{stage:r${level}}`] = { values: { med: 1, 'p(95)': 2, 'p(99)': 3, count: goodput * 5 } };
  }
  return { metrics };
}

function result(granularity: Granularity, s: K6Summary): GranularityResult {
  return extractResult({
    summary: s,
    workload: 'default',
    granularity,
    steady: { rate: 40, durationS: 20 },
    ramp: { levels: [20, 40, 80], stepS: 5, transitionS: 0 },
    k6ExitCode: 0,
    safety: { ok: true, holds: 100, violationCount: 0, warningCount: 0 },
  });
}

describe('report', () => {
  const config = defaultConfig();
  const workload = config.workloads[0]!;
  const results = [
    result('global', summary({ goodput: 240, offered: 800, p95: 900, conflicts: 500 }, { 20: 18, 40: 12, 80: 11 })),
    result('document', summary({ goodput: 790, offered: 800, p95: 12 }, { 20: 20, 40: 40, 80: 79 })),
    result('tree', summary({ goodput: 780, offered: 800, p95: 15 }, { 20: 20, 40: 39, 80: 60 })),
  ];

  it('extracts rates and the saturation point from a k6 summary', () => {
    const global = results[0]!;
    expect(global.steady.goodputRate).toBe(12);
    expect(global.steady.acquire.p95).toBe(900);
    expect(global.saturation).toEqual({ sustainedRate: 20, saturatedAt: 40, shortBelow: [], peakGoodputRate: 18, measured: true });
    expect(results[1]!.saturation.saturatedAt).toBeNull();
    expect(results[2]!.saturation).toMatchObject({ sustainedRate: 40, saturatedAt: 80 });
    expect(saturationOf([])).toMatchObject({ measured: false });
    // A stall at a low level does not hide that a higher level kept up.
    const stalled = result('tree', summary({ goodput: 800, offered: 800, p95: 1 }, { 20: 20, 40: 10, 80: 80 })).saturation;
    expect(stalled).toMatchObject({ sustainedRate: 80, saturatedAt: null, shortBelow: [40] });
  });

  it("reads k6's --summary-export like handleSummary's JSON: values, a rate's value, failed thresholds", () => {
    const exported = {
      root_group: { checks: {} },
      metrics: {
        'goodput{stage:steady}': { count: 30, rate: 10, thresholds: { 'count>=0': false } },
        errors: { value: 0.02, passes: 2, fails: 98, thresholds: { 'rate<0.01': true } },
        vus: { value: 1, min: 1, max: 2 },
        'acquire_latency{stage:steady}': { med: 5, 'p(95)': 9, 'p(99)': 12, count: 30, thresholds: { 'p(99)<=10': true } },
      },
    };
    const normalized = normalizeK6Summary(exported);
    expect(normalized.metrics['goodput{stage:steady}']).toEqual({ values: { count: 30, rate: 10 }, thresholds: { 'count>=0': { ok: true } } });
    expect(normalized.metrics.errors).toEqual({ values: { value: 0.02, rate: 0.02, passes: 2, fails: 98 }, thresholds: { 'rate<0.01': { ok: false } } });
    expect(normalized.metrics.vus!.values).toEqual({ value: 1, min: 1, max: 2 });
    const own = summary({ goodput: 1, offered: 1, p95: 1 }, {});
    expect(normalizeK6Summary(JSON.parse(JSON.stringify(own)))).toEqual(own);
    const extracted = extractResult({
      summary: normalized,
      workload: 'default',
      granularity: 'tree',
      steady: { rate: 10, durationS: 3 },
      ramp: { levels: [], stepS: 5, transitionS: 0 },
      k6ExitCode: 99,
      safety: null,
    });
    expect(extracted).toMatchObject({
      errorRate: 0.02,
      thresholdsOk: false,
      failedThresholds: ['errors: rate<0.01'],
      // The objective's own thresholds are told apart: missing them is a finding, not a broken run.
      missedObjective: ['acquire_latency{stage:steady}: p(99)<=10'],
      steady: { goodput: 30, acquire: { p95: 9 } },
    });
  });

  it("turns on k6's web dashboard only with an export path, on a free loopback port, with enough points", () => {
    expect(dashboardEnv(undefined, 60)).toEqual({ K6_WEB_DASHBOARD: 'false' });
    expect(dashboardEnv('/r/k6-dashboard-default-tree.html', 6)).toEqual({
      K6_WEB_DASHBOARD: 'true',
      K6_WEB_DASHBOARD_EXPORT: '/r/k6-dashboard-default-tree.html',
      K6_WEB_DASHBOARD_OPEN: 'false',
      K6_WEB_DASHBOARD_HOST: '127.0.0.1',
      K6_WEB_DASHBOARD_PORT: '0',
      K6_WEB_DASHBOARD_PERIOD: '1s',
    });
    expect(dashboardEnv('x.html', 300).K6_WEB_DASHBOARD_PERIOD).toBe('5s');
    expect(dashboardEnv('x.html', 3600).K6_WEB_DASHBOARD_PERIOD).toBe('10s');
  });

  /** One trial of a granularity whose capacity search ended between `capacity` and `failedAt`. */
  function trial(granularity: Granularity, n: number, capacity: number, p95: number, errorsRate = 0): GranularityResult {
    const base = result(granularity, summary({ goodput: 800, offered: 800, p95 }, { 20: 20, 40: 40, 80: 80 }, errorsRate));
    const failedAt = Math.round(capacity * 1.05);
    const probe = (rate: number, good: boolean) => ({
      rate,
      goodputRate: good ? rate : rate * 0.8,
      acquireP99: good ? 90 : 400,
      errorRate: 0,
      dropped: 0,
      good,
      reasons: good ? [] : ['p99'],
      marginal: false,
    });
    return { ...base, trial: n, capacity: { capacity, failedAt, probes: [probe(capacity, true), probe(failedAt, false)], truncated: false } };
  }
  const trials = (granularity: Granularity, capacities: number[], p95s: number[]) => capacities.map((c, i) => trial(granularity, i + 1, c, p95s[i]!));

  it('recommends by capacity when the ranges over trials do not overlap, with median, range and ratio', () => {
    const rec = recommend(
      workload,
      [
        ...trials('global', [20, 22, 21], [900, 950, 920]),
        ...trials('document', [160, 170, 165], [12, 13, 12]),
        ...trials('tree', [100, 110, 105], [15, 16, 15]),
      ],
      40,
    );
    expect(rec.winner).toBe('document');
    expect(rec.headline).toBe(
      "document: sustains 165 ops/s (160-170 over 3 trials) against tree's 105 ops/s (100-110 over 3 trials), 1.6x its capacity, and the ranges do not overlap",
    );
    expect(rec.reasons).toHaveLength(3);
    expect(rec.reasons[0]).toMatch(/^document: capacity 165 ops\/s .*leaves 125 ops\/s of headroom \(4\.1x the expected rate\)\.$/);
  });

  it('calls overlapping ranges a tie within noise, and says what would separate them', () => {
    const rec = recommend(workload, [...trials('document', [150, 160, 170], [12, 14, 13]), ...trials('tree', [155, 165, 175], [13, 12, 14])], 40);
    expect(rec.winner).toBeNull();
    expect(rec.headline).toMatch(/^tie within noise between (document and tree|tree and document): their capacities overlap/);
    expect(rec.headline).toMatch(/more trials \(--trials 5\)/);
  });

  it('lets latency decide only when capacities overlap and the p95 ranges do not', () => {
    const rec = recommend(workload, [...trials('document', [150, 160, 170], [12, 14, 13]), ...trials('tree', [155, 165, 175], [40, 45, 42])], 40);
    expect(rec.winner).toBe('document');
    expect(rec.headline).toMatch(/^document: capacity within noise of tree's .* but a lower acquire p95 at 40 ops\/s: 13 ms \(12-14 over 3 trials\) vs 42 ms/);
  });

  it('a single trial has no error bars and says so', () => {
    const rec = recommend(workload, [trial('document', 1, 160, 12), trial('tree', 1, 100, 15)], 40);
    expect(rec.winner).toBe('document');
    expect(rec.headline).toMatch(/one trial, so no error bars/);
  });

  it('never recommends an unsafe or failing granularity', () => {
    const unsafe = trials('document', [300, 310, 305], [5, 5, 5]).map((r, i) =>
      i === 1 ? { ...r, safety: { ok: false, holds: 10, violationCount: 2, warningCount: 0 } } : r,
    );
    const failing = [1, 2, 3].map((n) => trial('tree', n, 400, 1, 0.2));
    const rec = recommend(workload, [...trials('global', [20, 21, 22], [900, 900, 900]), ...unsafe, ...failing], 40);
    expect(rec.winner).toBe('global');
    expect(rec.reasons.join(' ')).toMatch(/document is excluded: the safety checker found 2 violation/);
    expect(rec.reasons.join(' ')).toMatch(/tree is excluded: 20\.00% of its operations failed/);
    expect(failing[0]!.thresholdsOk).toBe(false);
  });

  it('says where the winner flips across workloads that differ in renames, by interpolating the capacity ratio', () => {
    const workloads = renameSweep(workload, [2, 10, 30]);
    const at = (w: number, granularity: Granularity, capacities: number[]) =>
      trials(granularity, capacities, [10, 10, 10]).map((r) => ({ ...r, workload: workloads[w]!.name }));
    const entries = [
      { workload: workloads[0]!, results: [...at(0, 'document', [195, 200, 205]), ...at(0, 'tree', [115, 120, 125])] },
      { workload: workloads[1]!, results: [...at(1, 'document', [145, 150, 155]), ...at(1, 'tree', [115, 120, 125])] },
      { workload: workloads[2]!, results: [...at(2, 'document', [55, 60, 65]), ...at(2, 'tree', [105, 110, 115])] },
    ];
    expect(workloads.map((w) => [w.name, Math.round(w.mix.read), Math.round(w.mix.edit), w.mix.rename, Math.round(w.mix.create!)])).toEqual([
      ['renames-2', 69, 24, 2, 3],
      ['renames-10', 63, 22, 10, 3],
      ['renames-30', 49, 17, 30, 2],
    ]);
    expect(flipPoints(entries)).toEqual(['tree overtakes document between 10% and 30% directory renames (about 15% by interpolating the capacity ratio)']);
    const recs = entries.map((e) => recommend(e.workload, e.results, 40));
    expect(recs.map((r) => r.winner)).toEqual(['document', 'document', 'tree']);
    expect(crossWorkloadNote(entries, recs)).toMatch(/Tree overtakes document between 10% and 30%/);
    expect(() => parseCli(['--renames', '5'])).toThrow(/--renames: expected two or more different percentages/);
  });

  it('puts correctness first: a granularity whose locks let work under a directory being renamed is not ranked, however fast', () => {
    const phantom = trials('document', [300, 310, 305], [5, 5, 5]).map((r) => ({ ...r, safety: { ...r.safety!, phantomCount: 4 } }));
    const rec = recommend(workload, [...phantom, ...trials('tree', [100, 110, 105], [15, 16, 15])], 40);
    expect(rec.winner).toBe('tree');
    expect(rec.headline).toMatch(/; document is faster \(305 ops\/s\) but unsafe for this workload$/);
    expect(rec.reasons[0]).toMatch(/^document is unsafe for this workload: 12 operation\(s\) ran under a directory while another holder was renaming it/);
  });

  it('draws capacity with error bars from the trials', () => {
    const svg = capacityChart(workload, [...trials('document', [150, 160, 170], [12, 14, 13]), ...trials('tree', [100, 110, 105], [15, 16, 15])]);
    expect(svg).toBeDefined();
    expect(svg!.match(/class="error-bar"/g)).toHaveLength(2);
    expect(svg).toContain('document capacity: 150.0-179.0');
    expect(svg).not.toContain('class="warning"');
  });

  it('marks a granularity unsafe for the workload on the capacity chart, so its bar is not read as the pick', () => {
    const withPhantoms = trials('document', [150, 160, 170], [12, 14, 13]).map((r) => ({ ...r, safety: { ...r.safety!, phantomCount: 4 } }));
    const svg = capacityChart(workload, [...withPhantoms, ...trials('tree', [100, 110, 105], [15, 16, 15])]);
    expect(svg!.match(/class="warning"/g)).toHaveLength(1);
    expect(svg).toContain('unsafe: 12 semantic conflict(s)');
  });

  it('renders markdown, HTML and the charts naming every granularity, with medians, ranges and the probes', () => {
    const measured = [
      ...trials('global', [20, 22, 21], [900, 950, 920]).map((r) => ({ ...r, k6Dashboard: `k6-dashboard-default-global-t${r.trial}.html` })),
      ...trials('document', [160, 170, 165], [12, 13, 12]),
      ...trials('tree', [100, 110, 105], [15, 16, 15]),
    ];
    const input = {
      info: {
        runId: 'r1',
        startedAt: 'a',
        finishedAt: 'b',
        baseUrl: 'http://x',
        mode: 'local' as const,
        k6: 'k6 v1.8.1',
        server: { label: 'OpenSearch 3.8.0', url: 'http://127.0.0.1:9250' },
        config,
        notes: [],
      },
      results: measured,
    };
    const markdown = renderMarkdown(input, { goodput: 'goodput.svg', capacity: 'capacity.svg' });
    expect(markdown).toContain('- lock store: OpenSearch 3.8.0 at http://127.0.0.1:9250');
    expect(renderHtml(input)).toContain('<li>lock store: OpenSearch 3.8.0 at http://127.0.0.1:9250</li>');
    expect(renderMarkdown({ ...input, info: { ...input.info, server: undefined } }, { goodput: 'g.svg' })).toContain(
      '- lock store: not known here (--target without ES_URL or OPENSEARCH_URL)',
    );
    for (const granularity of ['global', 'document', 'tree']) expect(markdown).toMatch(new RegExp(`\\| ${granularity} \\|`));
    expect(markdown).toContain('![goodput against offered load](goodput.svg)');
    expect(markdown).toContain('![capacity per granularity, with the range over trials](capacity.svg)');
    expect(markdown).toContain('| document | 165 (160-170) |');
    expect(markdown).toContain('| document | 2 | 179 | 143.2 | 400 | missed: p99 |');
    expect(markdown).toContain('`k6-dashboard-<workload>-<granularity>[-t<trial>].html`');
    expect(markdown).toContain('`k6-...log` (what k6 printed');
    const html = renderHtml(input);
    expect(html.match(/<svg /g)).toHaveLength(4);
    // Fits a 1,300 px window: charts scale down, preformatted blocks and table cells wrap.
    expect(html).toContain('svg, img { max-width: 100%; height: auto; }');
    expect(html).toMatch(/pre \{[^}]*white-space: pre-wrap/);
    expect(html).toMatch(/th, td \{[^}]*overflow-wrap: anywhere/);
    expect(html).toContain('<li><a href="k6-dashboard-default-global-t2.html">global, trial 2</a></li>');
    expect(html.match(/href="k6-dashboard-/g)).toHaveLength(3);
    const svg = goodputChart(workload, measured);
    expect(svg.match(/<polyline class="series"/g)).toHaveLength(4);
    expect(svg).toContain('data-series="document"');
  });
});

describe('charts', () => {
  it('pick round ticks', () => {
    expect(niceTicks(95)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });

  it('escape labels and draw one bar per value', () => {
    const svg = barChart({
      title: 'a <b>',
      yLabel: 'ms',
      bars: ['p50', 'p95'],
      groups: [
        { name: 'x', values: [1, 2] },
        { name: 'y', values: [3, 4] },
      ],
    });
    expect(svg).toContain('a &lt;b&gt;');
    expect(svg.match(/<rect class="bar"/g)).toHaveLength(4);
    expect(lineChart({ title: 't', xLabel: 'x', yLabel: 'y', series: [{ name: 's', points: [] }] })).toContain('</svg>');
  });

  it('wrap a title wider than the chart instead of cutting it off at both ends, and start the plot below it', () => {
    const title = 'Capacity (median of 3 trials; whiskers: lowest sustained to highest missed) - renames-30';
    const subtitle = 'median of 3 trials; whiskers: lowest sustained to highest missed rate';
    const width = 400;
    const svg = barChart({ title, subtitle, yLabel: 'ops/s', bars: ['capacity'], groups: [{ name: 'tree', values: [100] }], width });
    const lines = [...svg.matchAll(/<text class="title" x="([\d.]+)" y="(\d+)"[^>]* font-size="(\d+)"[^>]*>([^<]*)<\/text>/g)].map((m) => ({
      x: Number(m[1]),
      y: Number(m[2]),
      size: Number(m[3]),
      text: m[4]!,
    }));
    expect(lines.length).toBeGreaterThan(2);
    // Every line fits inside the chart, at a generous 0.6 em per character, centred.
    for (const line of lines) {
      expect(line.text.length * line.size * 0.6, line.text).toBeLessThanOrEqual(width);
      expect(line.x).toBe(width / 2);
    }
    expect(lines.map((line) => line.text).join(' ')).toBe(`${title} ${subtitle}`);
    // The grid's top line lies below the last title line.
    const gridTop = Math.min(...[...svg.matchAll(/<line x1="70" y1="([\d.]+)"/g)].map((m) => Number(m[1])));
    expect(gridTop).toBeGreaterThan(lines.at(-1)!.y + 10);
    expect(wrapText('one two three', 10, 60)).toEqual(['one two', 'three']);
  });
});
