/** Names a run: its id (for namespaces and index names) and a results folder no earlier run used. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export interface RunName {
  runId: string;
  startedAt: Date;
  outDir: string;
}

export function nameRun(resultsDir: string, startedAt = new Date()): RunName {
  const stamp = startedAt
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/:/g, '-');
  let outDir = resolve(resultsDir, stamp);
  for (let n = 2; existsSync(outDir); n++) outDir = resolve(resultsDir, `${stamp}-${n}`);
  // Lower case without separators: it goes into lock namespaces and Elasticsearch index names.
  return { runId: stamp.replace(/-/g, '').toLowerCase(), startedAt, outDir };
}
