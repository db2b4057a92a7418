/**
 * npm run loadtest:model [-- --granularities global,document,tree --trials 5 --probe-seconds 3 --keep-cluster]
 *
 * Checks the deployment model (loadtests/runner/model.ts) against a cluster it did not see:
 * calibrates every granularity with the engine-only layer on the single local node (Elasticsearch, or
 * OpenSearch with --store opensearch), predicts its capacity on a 3-node local cluster of that product (one replica; the nodes share this machine), and measures that
 * cluster. The cluster enters the model only as how much longer each kind of request takes on it
 * (request-latency.ts, no locks involved): idle in every trial on both sides, then, after the
 * trials, under a lock-free load of the granularity's request mix at the rate the model predicts
 * (loaded-prediction.ts: bisection, each step measured on both sides). Both are up at
 * once and the searches alternate between them, trial after trial, so the machine's noise falls on
 * both sides alike; the prediction comes from the median calibration and is
 * compared with the median measurement (model-check.ts). Writes
 * results/model-<timestamp>/model.md and model.json, which `npm run loadtest` reports.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterNodes, startCluster, stopCluster } from '../../../infra/es/cluster.js';
import { isRunning } from '../../../infra/es/probe.js';
import { describeServer, serverLabel } from '../../../infra/lib/server-info.js';
import { resolveStore, STORE_RULE, type StoreEndpoint, storeAt, storeDistribution, storeLogTag } from '../../../infra/lib/store-target.js';
import { parseFlags, printHelp } from '../../../tools/cli/flags.js';
import { runCli } from '../../../tools/cli/run-cli.js';
import { formatSeconds } from '../../../tools/shared/format-seconds.js';
import { defaultWorkload } from '../../shared/defaults.js';
import { DEFAULT_OBJECTIVE } from '../../shared/objective.js';
import { GRANULARITY_NAMES, type Granularity, NAMESPACES_PER_RUN } from '../../shared/workload.js';
import { type Bracket, DEFAULT_SEARCH } from '../capacity.js';
import { defaultConfig } from '../config.js';
import { EngineLayer } from '../engine/layer.js';
import { type LoadedPrediction, loadedPrediction } from '../loaded-prediction.js';
import { assumptions, type Calibration, type Deployment, type PerKind, REQUEST_KINDS } from '../model.js';
import { type CheckTrial, checkRows, checkTable, checkVerdict, medianCalibration, medianPerKind, sidesInTrial } from '../model-check.js';
import { addedLatency, DEFAULT_LATENCY_ROUNDS, measureLoadedLatency, measureRequestLatency } from '../request-latency.js';
import { readSearchFlags, SEARCH_FLAGS } from '../search-flags.js';

/** What the command searches when no flag says otherwise (every granularity, five trials of 3 s probes), and the longest probe it takes. */
const DEFAULTS = { granularities: GRANULARITY_NAMES, trials: 5, probeS: 3, maxProbeS: 60 };

const USAGE = `usage: npm run loadtest:model -- [options]

Predicts each granularity's capacity on a 3-node local cluster from the single local node (or ES_URL,
OPENSEARCH_URL), measures the cluster, and prints predicted against measured (results/model-<time>/).
Both are up at once; the searches alternate between them over the trials.
  --store S             ${STORE_RULE}
  --granularities LIST  default ${DEFAULTS.granularities.join(',')} (also --strategies)
  --trials N            searches per granularity on each side, medians compared (default ${DEFAULTS.trials})
  --probe-seconds S     length of each capacity probe (default ${DEFAULTS.probeS})
  --keep-cluster        leave the 3-node cluster running (npm run cluster:stop, opensearch-cluster:stop)
  --verbose             stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed (e.g. the server unreachable), 2 a usage mistake.`;

type Side = 'single' | 'cluster';
const perKindText = (values: PerKind): string => REQUEST_KINDS.map((kind) => `${kind} ${values[kind].toFixed(1)}`).join(', ');
const WARM_UP_RATE = 20;
const LOADED_STEPS = 5;
const LOADED_SECONDS = 8;
const SIDE_LABEL: Record<Side, string> = { single: '1 node', cluster: '3 nodes' };

async function openLayer(store: StoreEndpoint, side: Side): Promise<EngineLayer> {
  const client = store.client({ requestTimeoutMs: 10_000 });
  await client.cluster.health({ wait_for_status: 'green', timeout: '60s' }).catch(() => {});
  return EngineLayer.open(client, defaultConfig(), `model${side}${Date.now().toString(36)}`, () => client.close());
}

/** One capacity search of one granularity on one side, and the figures the model is calibrated with (at a light load). */
async function calibrate(layer: EngineLayer, granularity: Granularity, trial: number, probeS: number, hint: Bracket | undefined) {
  const workload = defaultWorkload();
  const engine = await layer.searchCapacity(workload, granularity, trial, {
    probeS,
    objective: DEFAULT_OBJECTIVE,
    search: DEFAULT_SEARCH,
    ...(hint ? { hint } : {}),
  });
  const { capacity, failedAt } = engine.capacity;
  // No met probe at all: the capacity is 0 and so is the prediction; the other figures do not matter then.
  const calibration: Calibration = engine.calibration ?? {
    granularity,
    capacity,
    requestsPerOp: 0,
    writeShare: 0,
    esMsPerOp: 0,
    backoffMsPerOp: 0,
    criticalSectionMs: workload.criticalSectionMs,
  };
  return { calibration, bracket: { good: capacity, bad: failedAt } satisfies Bracket, failedAt };
}

/**
 * Every granularity once at a light load on each side, not counted. The cluster's JVMs start with the
 * check and compile their hot paths during the first probes; without this the first trial on the
 * cluster measured below the later ones for every granularity (global 19 then 28-30 ops/s, tree 34
 * then 44-70), and the single node, started earlier and warmed by other runs, did not.
 */
async function warmUpSide(layer: EngineLayer, side: Side, granularities: Granularity[], probeS: number): Promise<void> {
  const started = Date.now();
  for (const granularity of granularities) await layer.probe(defaultWorkload(), granularity, WARM_UP_RATE, probeS, 0, DEFAULT_OBJECTIVE);
  console.log(
    `[model] warmed up ${SIDE_LABEL[side]} (${granularities.length} probe(s) at ${WARM_UP_RATE} ops/s, ${formatSeconds((Date.now() - started) / 1000)})`,
  );
}

/** The cluster as idle requests describe it: the median over the trials of how much longer each kind took there. */
function idleDeployment(latencies: Array<Record<Side, PerKind>>, trials: number): Deployment {
  return {
    functions: defaultConfig().schedule.vus.max,
    nodes: 3,
    replicas: 1,
    // The check's cluster has a lock index of one primary shard; each probe runs in one namespace.
    shards: 1,
    namespaces: NAMESPACES_PER_RUN,
    addedMs: medianPerKind(latencies.map((l) => addedLatency(l.single, l.cluster))),
    addedMsSource: `measured: the median over ${trials} trial(s) of ${DEFAULT_LATENCY_ROUNDS} rounds of each request on each side, one at a time; under load, at the rate predicted (${LOADED_STEPS} bisection steps of ${LOADED_SECONDS} s on each side)`,
  };
}

/** How much longer each kind of request takes on the cluster than on the single node, both carrying `rates` of lock-free requests. */
async function addedUnderLoad(layers: Record<Side, EngineLayer>, rates: PerKind, step: number): Promise<PerKind> {
  const measured: Partial<Record<Side, PerKind>> = {};
  for (const side of sidesInTrial(step + 1))
    measured[side] = await measureLoadedLatency(layers[side].client, `lt-loaded-${side}-${Date.now().toString(36)}`, rates, LOADED_SECONDS);
  return addedLatency(measured.single!, measured.cluster!);
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { ...SEARCH_FLAGS, 'keep-cluster': { type: 'boolean' } });
  if (printHelp(values, USAGE)) return 0;
  const { product, granularities, trials, probeS } = readSearchFlags(values, DEFAULTS);
  const distribution = storeDistribution(product);

  const single = await resolveStore(product, (line) => console.log(`[${storeLogTag(product)}] ${line}`));
  const nodes = clusterNodes(3, undefined, distribution);
  const clusterUrls = nodes.map((node) => node.url).join(',');
  const alreadyUp = await isRunning(nodes[0]!, distribution.cluster.clusterName);
  if (!alreadyUp) {
    console.log(`[model] starting the 3-node ${single.name} cluster (about a minute)`);
    await startCluster(3, (line) => console.log(`[${distribution.cluster.logTag}] ${line}`), distribution);
  }
  let server = single.name;
  const layers: Partial<Record<Side, EngineLayer>> = {};
  const done: CheckTrial[] = [];
  const latencies: Array<Record<Side, PerKind>> = [];
  const loaded: Record<string, LoadedPrediction> = {};
  let deployment: Deployment | undefined;
  try {
    layers.single = await openLayer(single, 'single');
    // Requests spread over the three nodes, as behind a deployment's endpoint. Through one node, each
    // run's figures hung on where its indices' primaries fell: on that node, a request saves a hop.
    layers.cluster = await openLayer(storeAt(product, clusterUrls), 'cluster');
    server = serverLabel(await describeServer(layers.single.client));
    console.log(`[model] ${server}: ${granularities.join(', ')} x ${trials} trial(s), alternating between ${single.url} (1 node) and ${clusterUrls} (3 nodes)`);
    for (const side of ['single', 'cluster'] as const) await warmUpSide(layers[side]!, side, granularities, probeS);
    const started = Date.now();
    const total = trials * granularities.length * 2;
    let searches = 0;
    const hints = new Map<string, Bracket>();
    for (let trial = 1; trial <= trials; trial++) {
      const latency: Partial<Record<Side, PerKind>> = {};
      for (const side of sidesInTrial(trial))
        latency[side] = await measureRequestLatency(layers[side]!.client, `lt-latency-${side}-${Date.now().toString(36)}`);
      latencies.push(latency as Record<Side, PerKind>);
      console.log(
        `[model] trial ${trial}/${trials} request latency, median ms: ${sidesInTrial(1)
          .map((side) => `${SIDE_LABEL[side]} ${perKindText(latency[side]!)}`)
          .join('; ')}`,
      );
      for (const granularity of granularities) {
        const pair: Partial<Record<Side, Calibration>> = {};
        for (const side of sidesInTrial(trial)) {
          const key = `${side}/${granularity}`;
          const { calibration, bracket, failedAt } = await calibrate(layers[side]!, granularity, trial, probeS, hints.get(key));
          if (!hints.has(key)) hints.set(key, bracket); // later trials start from trial 1's bracket, as in the load test
          pair[side] = calibration;
          searches++;
          const elapsedS = (Date.now() - started) / 1000;
          console.log(
            `[model] trial ${trial}/${trials} ${SIDE_LABEL[side]} ${granularity}: capacity ${calibration.capacity} ops/s (missed at ${failedAt ?? '-'}), ` +
              `${calibration.requestsPerOp.toFixed(2)} requests/op (${Math.round(calibration.writeShare * 100)}% writes), ` +
              `${calibration.esMsPerOp.toFixed(1)} ms in ${single.name} per op at a light load ` +
              (calibration.esMsByKind ? `(requests then, mean ms: ${perKindText(calibration.esMsByKind)}) ` : '') +
              (calibration.p99?.requestsByOp.rename ? `(a rename's requests: ${perKindText(calibration.p99.requestsByOp.rename)}) ` : '') +
              `(${searches}/${total}, ${formatSeconds(elapsedS)} elapsed, ~${formatSeconds((elapsedS / searches) * (total - searches))} left)`,
          );
        }
        done.push({ granularity, single: pair.single!, cluster: pair.cluster! });
      }
    }
    deployment = idleDeployment(latencies, trials);
    for (const granularity of granularities) {
      const calibration = medianCalibration(done.filter((t) => t.granularity === granularity).map((t) => t.single));
      loaded[granularity] = await loadedPrediction(
        calibration,
        deployment,
        (rates, step) => addedUnderLoad(layers as Record<Side, EngineLayer>, rates, step),
        LOADED_STEPS,
        (step, index) =>
          console.log(
            `[model] ${granularity} under load ${index + 1}/${LOADED_STEPS}: at ${step.rate.toFixed(1)} ops/s the cluster adds ${perKindText(step.addedMs)} ms, ` +
              `so the model predicts ${step.predicted.toFixed(1)} ops/s`,
          ),
      );
    }
  } finally {
    await layers.single?.close();
    await layers.cluster?.close();
    if (!alreadyUp && !values['keep-cluster']) await stopCluster(3, distribution);
    await single.stop(); // only if this command started it, as npm run loadtest does
  }

  if (!deployment) throw new Error('the check ended before its trials');
  const rows = checkRows(done, deployment, loaded);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  const dir = join('results', `model-${stamp}`);
  mkdirSync(dir, { recursive: true });
  const text = [
    '# Deployment model, checked on a 3-node cluster',
    '',
    `Server: ${server} (single node ${single.url}, cluster ${clusterUrls}).`,
    '',
    `Capacity (ops/s) of the engine-only layer, default workload, objective: goodput >= 95%, acquire p99 <= 250 ms; median (range) of ${trials} search(es) on each side, alternating between them. Predicted from the single node's median calibration and how much longer each kind of request takes on the cluster, measured without locks under the load the prediction puts on it, never from the cluster's lock figures.`,
    '',
    checkTable(rows),
    '',
    checkVerdict(rows),
    '',
    'Assumptions:',
    ...assumptions(deployment).map((line) => `- ${line}`),
    '',
  ].join('\n');
  writeFileSync(join(dir, 'model.md'), text);
  writeFileSync(join(dir, 'model.json'), `${JSON.stringify({ server, deployment, latencies, loaded, trials: done, rows }, null, 2)}\n`);
  console.log(`\n${text}\nwritten to ${dir}`);
  return 0;
}

runCli(main);
