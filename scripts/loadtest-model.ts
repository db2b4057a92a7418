/**
 * npm run loadtest:model [-- --strategies global,document,tree --probe-seconds 3 --hop-ms 0.5 --keep-cluster]
 *
 * Checks the deployment model (scripts/loadtest/model.ts) against a cluster it did not see:
 * calibrates every strategy with the engine-only layer on the single local node, predicts its
 * capacity on a 3-node local cluster (one replica; the nodes share this machine), then starts that
 * cluster (npm run cluster:start), measures, and prints predicted against measured. Writes
 * results/model-<timestamp>/model.md and model.json, which `npm run loadtest` reports.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createElasticsearchClient } from '../functions/store/index.js';
import { clusterNodes, startCluster, stopCluster } from '../infra/es/cluster.js';
import { isRunning } from '../infra/es/probe.js';
import { resolveElasticsearch } from '../infra/es/target.js';
import { numberFlag, parseFlags, printHelp, runCli, UsageError } from '../infra/lib/cli.js';
import { defaultWorkload } from '../loadtests/lib/defaults.js';
import type { Strategy } from '../loadtests/lib/workload.js';
import { DEFAULT_OBJECTIVE, DEFAULT_SEARCH, searchCapacity } from './loadtest/capacity.js';
import { defaultConfig } from './loadtest/config.js';
import { EngineLayer } from './loadtest/engine-probe.js';
import { assumptions, type Calibration, type Deployment, predict, relativeError } from './loadtest/model.js';

const USAGE = `usage: npm run loadtest:model -- [options]

Predicts each strategy's capacity on a 3-node local cluster from the single local node (or ES_URL),
then starts the cluster, measures, and prints predicted against measured (results/model-<time>/).
  --strategies LIST     default global,document,tree
  --probe-seconds S     length of each capacity probe (default 3)
  --hop-ms MS           extra latency of a replicated write on this machine (default 0.5)
  --keep-cluster        leave the 3-node cluster running (npm run cluster:stop)
  --verbose             stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed (e.g. Elasticsearch unreachable), 2 a usage mistake.`;

async function measure(url: string, label: string, strategies: Strategy[], probeS: number): Promise<Calibration[]> {
  const client = createElasticsearchClient({ url, ...(process.env.ES_API_KEY ? { apiKey: process.env.ES_API_KEY } : {}), requestTimeoutMs: 10_000 });
  const config = defaultConfig();
  const workload = defaultWorkload();
  const layer = await EngineLayer.open(client, config, `model${Date.now().toString(36)}`, () => client.close());
  try {
    await client.cluster.health({ wait_for_status: 'green', timeout: '60s' }).catch(() => {});
    const calibrations: Calibration[] = [];
    for (const strategy of strategies) {
      const light = await layer.probe(workload, strategy, 20, probeS, 1, DEFAULT_OBJECTIVE);
      const search = await searchCapacity(
        (rate) => layer.probe(workload, strategy, rate, probeS, 1, DEFAULT_OBJECTIVE).then((run) => run.verdict),
        DEFAULT_SEARCH,
      );
      const calibration: Calibration = {
        strategy,
        capacity: search.capacity,
        requestsPerOp: light.esRequests / Math.max(1, light.stage.goodput),
        writeShare: light.esRequests > 0 ? light.esWrites / light.esRequests : 0,
        esMsPerOp: light.esMsPerOp,
        backoffMsPerOp: light.backoffMsPerOp,
        criticalSectionMs: workload.criticalSectionMs,
      };
      console.log(
        `[model] ${label} ${strategy}: capacity ${search.capacity} ops/s (missed at ${search.failedAt ?? '-'}), ` +
          `${calibration.requestsPerOp.toFixed(2)} requests/op (${Math.round(calibration.writeShare * 100)}% writes), ` +
          `${calibration.esMsPerOp.toFixed(1)} ms in Elasticsearch per op at 20 ops/s`,
      );
      calibrations.push(calibration);
    }
    return calibrations;
  } finally {
    await layer.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    strategies: { type: 'string' },
    'probe-seconds': { type: 'string' },
    'hop-ms': { type: 'string' },
    'keep-cluster': { type: 'boolean' },
  });
  if (printHelp(values, USAGE)) return 0;
  const strategies = String(values.strategies ?? 'global,document,tree').split(',') as Strategy[];
  const unknown = strategies.find((s) => !['global', 'document', 'tree'].includes(s));
  if (unknown !== undefined) throw new UsageError(`--strategies: unknown strategy "${unknown}" (global, document, tree)`);
  const probeS = numberFlag('--probe-seconds', values['probe-seconds'] as string | undefined, { integer: true, min: 1, max: 60 }, 3);
  const hopMs = numberFlag('--hop-ms', values['hop-ms'] as string | undefined, { min: 0, max: 1000 }, 0.5);

  const single = await resolveElasticsearch((line) => console.log(`[es] ${line}`));
  console.log(`[model] calibrating on the single node ${single.url}`);
  const calibrations = await measure(single.url, '1 node', strategies, probeS);

  const deployment: Deployment = { functions: defaultConfig().schedule.vus.max, nodes: 3, replicas: 1, colocated: true, hopMs };
  const predictions = calibrations.map((calibration) => predict(calibration, deployment));

  const nodes = clusterNodes(3);
  const alreadyUp = await isRunning(nodes[0]!);
  if (!alreadyUp) {
    console.log('[model] starting the 3-node cluster (about a minute)');
    await startCluster(3, (line) => console.log(`[cluster] ${line}`));
  }
  let measured: Calibration[];
  try {
    measured = await measure(nodes[0]!.url, '3 nodes', strategies, probeS);
  } finally {
    if (!alreadyUp && !values['keep-cluster']) await stopCluster(3);
  }

  const rows = predictions.map((prediction, i) => {
    const actual = measured[i]!.capacity;
    const error = relativeError(prediction.capacity, actual);
    return {
      strategy: prediction.strategy,
      calibrated: calibrations[i]!.capacity,
      predicted: Math.round(prediction.capacity),
      measured: actual,
      error,
      bound: prediction.bound,
    };
  });
  const table = [
    '| strategy | 1 node (calibration) | 3 nodes predicted | 3 nodes measured | error | bound |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.strategy} | ${r.calibrated} | ${r.predicted} | ${r.measured} | ${(r.error * 100).toFixed(0)}% | ${r.bound} |`),
  ].join('\n');
  const within = rows.every((r) => r.error <= 0.2);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  const dir = join('results', `model-${stamp}`);
  mkdirSync(dir, { recursive: true });
  const text = [
    '# Deployment model, checked on a 3-node cluster',
    '',
    'Capacity (ops/s) of the engine-only layer, default workload, objective: goodput >= 95%, acquire p99 <= 250 ms. Predicted from the single node alone.',
    '',
    table,
    '',
    `Within ±20% for every strategy: ${within ? 'yes' : 'no'}.`,
    '',
    'Assumptions:',
    ...assumptions(deployment).map((line) => `- ${line}`),
    '',
  ].join('\n');
  writeFileSync(join(dir, 'model.md'), text);
  writeFileSync(join(dir, 'model.json'), `${JSON.stringify({ deployment, calibrations, measured, rows }, null, 2)}\n`);
  console.log(`\n${text}\nwritten to ${dir}`);
  return 0;
}

runCli(main);
