/**
 * Reads the user's own workload for a run: paths from a file or from an Elasticsearch index, and a
 * trace to replay. Checked before anything starts (an index once Elasticsearch is up), with errors
 * that name the file and line, or the index and field. The run's copy goes to its results folder,
 * where k6 reads it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { SearchClient } from '../../functions/store/search-client.js';
import { explainServiceError, ServiceError } from '../../tools/cli/service-errors.js';
import {
  parsePathList,
  parseTrace,
  pathProblem,
  type TraceEntry,
  traceOperations,
  traceSeconds,
  treeFromPaths,
  treeFromTrace,
} from '../shared/user-workload.js';
import { buildTree, type Tree, type WorkloadConfig } from '../shared/workload.js';
import { ConfigError } from './config-error.js';

export interface UserWorkload {
  /** Paths from --paths or --from-index (read later, once Elasticsearch answers). */
  paths?: { list: string[]; source: string };
  index?: { name: string; field: string; max: number };
  trace?: { entries: TraceEntry[]; source: string; speed: number };
}

const MAX_LISTED = 5;

function fail(problems: string[]): never {
  const shown = problems.slice(0, MAX_LISTED);
  const more = problems.length > MAX_LISTED ? `\n  ... and ${problems.length - MAX_LISTED} more` : '';
  throw new ConfigError(shown.length === 1 && !more ? shown[0]! : `${shown.join('\n  ')}${more}`);
}

function readText(file: string, flag: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(`${flag} ${file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
}

export function readPathsFile(file: string, max: number): { list: string[]; source: string } {
  const { paths, problems } = parsePathList(readText(file, '--paths'), `--paths ${file}`);
  if (problems.length > 0) fail(problems);
  if (paths.length > max) throw new ConfigError(`--paths ${file}: ${paths.length} paths; at most ${max} (--max-paths), or use a sample`);
  checkTree(paths, `--paths ${file}`);
  return { list: paths, source: file };
}

export function readTraceFile(file: string, speed: number): { entries: TraceEntry[]; source: string; speed: number } {
  if (!(speed > 0 && speed <= 1000)) throw new ConfigError(`--trace-speed: must be a number in (0, 1000] (got ${speed}); see --help`);
  const { entries, problems } = parseTrace(readText(file, '--trace'), `--trace ${file}`);
  if (problems.length > 0) fail(problems);
  return { entries, source: file, speed };
}

function checkTree(paths: string[], label: string, directories: string[] = []): Tree {
  try {
    return treeFromPaths(paths, directories);
  } catch (error) {
    throw new ConfigError(`${label}: ${(error as Error).message}`);
  }
}

/** The tree and, with a trace, its operations over that tree (a rename must name one of its directories). */
export function checkUserWorkload(user: UserWorkload): void {
  if (!user.trace) return;
  const tree = user.paths ? checkTree(user.paths.list, `--paths ${user.paths.source}`) : treeFromTraceChecked(user.trace.entries, user.trace.source);
  try {
    traceOperations(user.trace.entries, tree);
  } catch (error) {
    throw new ConfigError(`--trace ${user.trace.source}: ${(error as Error).message}${user.paths ? ` (from --paths ${user.paths.source})` : ''}`);
  }
}

function treeFromTraceChecked(entries: TraceEntry[], source: string): Tree {
  try {
    return treeFromTrace(entries);
  } catch (error) {
    throw new ConfigError(`--trace ${source}: ${(error as Error).message}`);
  }
}

/**
 * Paths from the `field` of the documents of `index` (search_after over _doc, source filtered):
 * the tree of data the user already keeps in Elasticsearch.
 */
export async function readIndexPaths(
  client: SearchClient,
  esUrl: string,
  index: { name: string; field: string; max: number },
): Promise<{ list: string[]; source: string }> {
  const label = `--from-index ${index.name} --path-field ${index.field}`;
  const exists = await client.indices.exists({ index: index.name }).catch((error: unknown) => {
    const service = explainServiceError(error);
    throw service
      ? new ServiceError({ ...service.problem, tried: `${label}: ${service.problem.tried}` }, { cause: error })
      : new Error(`${label}: could not ask ${esUrl} (${(error as Error).message}); is Elasticsearch up, and ES_URL / ES_API_KEY right?`);
  });
  if (!exists) throw new ConfigError(`${label}: no index "${index.name}" on ${esUrl}`);
  const paths: string[] = [];
  const problems: string[] = [];
  let missing = 0;
  let after: Array<string | number> | undefined;
  while (paths.length < index.max) {
    const page = await client.search<Record<string, unknown>>({
      index: index.name,
      size: Math.min(1000, index.max - paths.length),
      _source: [index.field],
      sort: ['_doc'],
      ...(after ? { search_after: after } : {}),
    });
    const hits = page.hits.hits;
    if (hits.length === 0) break;
    for (const hit of hits) {
      const value = index.field
        .split('.')
        .reduce<unknown>((at, key) => (at && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined), hit._source);
      if (typeof value !== 'string') {
        missing++;
        continue;
      }
      const problem = pathProblem(value);
      if (problem) problems.push(`${label}: document ${hit._id}: "${value.slice(0, 80)}" ${problem}`);
      else paths.push(value);
    }
    after = hits.at(-1)!.sort as Array<string | number>;
  }
  if (problems.length > 0) fail(problems);
  if (paths.length === 0) {
    throw new ConfigError(`${label}: no document of ${index.name} has a string "${index.field}"${missing ? ` (${missing} documents without it)` : ''}`);
  }
  checkTree(paths, label);
  return { list: paths, source: `${esUrl} ${index.name}.${index.field}` };
}

/**
 * Writes the run's copy of the user's paths and trace into its results folder, points the
 * workloads at them, and, for a trace, sets the expected rate to the trace's own (× speed).
 */
export function applyUserWorkload(
  config: { schedule: { steady: { rate: number; durationS: number } }; workloads: WorkloadConfig[] },
  user: UserWorkload,
  outDir: string,
): string[] {
  const notes: string[] = [];
  const pathsFile = user.paths ? resolve(join(outDir, 'paths.txt')) : undefined;
  if (user.paths && pathsFile) {
    writeFileSync(pathsFile, `${user.paths.list.join('\n')}\n`);
    notes.push(`tree from ${user.paths.list.length} paths (${user.paths.source})`);
  }
  const traceFile = user.trace ? resolve(join(outDir, 'trace.jsonl')) : undefined;
  if (user.trace && traceFile) {
    writeFileSync(
      traceFile,
      `${user.trace.entries.map((entry) => JSON.stringify({ op: entry.op, target: entry.target, time: entry.atMs / 1000 })).join('\n')}\n`,
    );
    const seconds = traceSeconds(user.trace.entries, user.trace.speed);
    config.schedule.steady = { rate: Math.max(1, Math.round(user.trace.entries.length / seconds)), durationS: seconds };
    notes.push(
      `the expected rate replays ${user.trace.entries.length} operations of ${user.trace.source} at ${user.trace.speed}x their timing ` +
        `(${seconds} s, about ${config.schedule.steady.rate} ops/s); capacity probes offer the same operations in order at constant rates`,
    );
  }
  const origin = {
    ...(user.paths ? { tree: `${user.paths.list.length} paths from ${user.paths.source}` } : user.trace ? { tree: `the paths of ${user.trace.source}` } : {}),
    ...(user.trace ? { operations: `${user.trace.entries.length} operations replayed from ${user.trace.source} at ${user.trace.speed}x` } : {}),
  };
  config.workloads = config.workloads.map((workload) => ({
    ...workload,
    ...(pathsFile ? { pathsFile } : {}),
    ...(traceFile ? { traceFile, traceSpeed: user.trace!.speed } : {}),
    origin,
  }));
  return notes;
}

/** The tree a workload works on, as k6 builds it (generated, or from the run's paths or trace file). */
export function treeOfWorkload(workload: WorkloadConfig): Tree {
  if (workload.pathsFile) return treeFromPaths(parsePathList(readFileSync(workload.pathsFile, 'utf8'), workload.pathsFile).paths);
  if (workload.traceFile) return treeFromTrace(parseTrace(readFileSync(workload.traceFile, 'utf8'), workload.traceFile).entries);
  return buildTree(workload.tree);
}
