/** The deployment model in the reports: predictions for the user's deployment, and the latest check of the model on a 3-node cluster. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NAMESPACES_PER_RUN } from '../../shared/workload.js';
import { assumptions, deploymentFromHop, predict } from '../model.js';
import type { GranularityResult } from '../summary.js';
import { round } from './format.js';
import type { RunInfo } from './report-input.js';

/** Markdown lines; empty when the engine-only layer did not run (it is the calibration). */
export function modelLines(info: RunInfo, results: GranularityResult[]): string[] {
  const calibrations = [...new Map(results.filter((r) => r.engine?.calibration).map((r) => [r.granularity, r.engine!.calibration!])).values()];
  if (calibrations.length === 0) return [];
  const { functions, nodes, shards } = info.config.deployment;
  const deployment = deploymentFromHop({ ...info.config.deployment, namespaces: NAMESPACES_PER_RUN });
  const rows = calibrations.map((calibration) => {
    const prediction = predict(calibration, deployment);
    return `| ${calibration.granularity} | ${round(calibration.capacity, 0)} | ${round(prediction.capacity, 0)} | ${prediction.bound} | ${round(prediction.operationMs)} |`;
  });
  const lines = [
    `Predicted for ${functions} concurrent functions against a ${nodes}-node cluster, a lock index of ${shards} primary shard(s) (--functions, --nodes, --shards, --replicas, --hop-ms), calibrated on this run's engine-only layer:`,
    '',
    '| granularity | engine alone here ops/s | predicted ops/s | limited by | one operation ms |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
    '',
    'Assumptions:',
    ...assumptions(deployment).map((line) => `- ${line}`),
    '',
  ];
  const check = latestCheck(info.config.resultsDir);
  lines.push(
    ...(check
      ? [`The model's latest check on this machine (${check.name}: predicted from one node, measured on three):`, '', check.table, '']
      : ['The model has not been checked on this machine yet: `npm run loadtest:model` predicts a 3-node local cluster from one node, then measures it.', '']),
  );
  return lines;
}

function latestCheck(resultsDir: string): { name: string; table: string } | undefined {
  if (!existsSync(resultsDir)) return undefined;
  const name = readdirSync(resultsDir)
    .filter((entry) => entry.startsWith('model-') && existsSync(join(resultsDir, entry, 'model.md')))
    .sort()
    .at(-1);
  if (!name) return undefined;
  const text = readFileSync(join(resultsDir, name, 'model.md'), 'utf8');
  const table = text
    .split('\n')
    .filter((line) => line.startsWith('|') || line.startsWith('Within'))
    .join('\n');
  return { name, table };
}
