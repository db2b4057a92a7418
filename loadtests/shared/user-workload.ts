/**
 * The user's own workload: a tree built from their paths (a file of paths, or paths read from an
 * Elasticsearch index by the orchestrator) and a trace of operations to replay. Pure code shared
 * by k6 and the orchestrator: parsing and validation here, reading files and indexes elsewhere.
 */
import { type DirNode, MAX_IDS_PER_REQUEST, OP_KINDS, type Operation, type OpKind, type Tree, type WorkloadConfig } from './workload.ts';

/** One operation of a trace, time-ordered, at `atMs` after the trace's first operation. */
export interface TraceEntry {
  op: OpKind;
  target: string;
  atMs: number;
}

const MAX_PATH_BYTES = 512;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's job.
const CONTROL = /[\u0000-\u001f\u007f]/;

/** UTF-8 length without TextEncoder (k6 has none). */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

/** Why a path cannot name a file or directory of the tree; undefined when it can. */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'must start with "/"';
  if (path === '/') return 'is the root; name a file or directory below it';
  if (path.endsWith('/')) return 'must not end with "/"';
  if (path.includes('//')) return 'has an empty segment ("//")';
  if (path.split('/').some((segment) => segment === '.' || segment === '..')) return 'has a "." or ".." segment';
  if (CONTROL.test(path)) return 'has a control character';
  if (utf8Bytes(path) > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  return undefined;
}

const parentOf = (path: string): string => path.slice(0, path.lastIndexOf('/'));

/**
 * The tree a set of paths makes: every path that is no other path's ancestor is a file; every
 * ancestor of a file (but the root) is a directory. Throws a readable error when a directory is too
 * big for a rename under document locks (it locks every file below in one request).
 */
export function treeFromPaths(paths: readonly string[], directories: readonly string[] = []): Tree {
  const unique = [...new Set(paths)].sort();
  const ancestors = new Set<string>();
  for (const path of [...unique, ...directories]) {
    for (let dir = parentOf(path); dir !== ''; dir = parentOf(dir)) ancestors.add(dir);
  }
  for (const dir of directories) ancestors.add(dir);
  const files = unique.filter((path) => !ancestors.has(path));
  const byPath = new Map<string, DirNode>();
  for (const dir of [...ancestors].sort()) byPath.set(dir, { path: dir, depth: dir.split('/').length - 1, files: [] });
  for (const file of files) {
    for (let dir = parentOf(file); dir !== ''; dir = parentOf(dir)) byPath.get(dir)?.files.push(file);
  }
  const dirs = [...byPath.values()];
  const largest = dirs.reduce<DirNode | undefined>((big, dir) => (!big || dir.files.length > big.files.length ? dir : big), undefined);
  if (largest && largest.files.length >= MAX_IDS_PER_REQUEST) {
    throw new Error(
      `directory ${largest.path} has ${largest.files.length} files below it; a rename under the document granularity locks ` +
        `fewer than ${MAX_IDS_PER_REQUEST} ids per request: use a subtree or a sample of the paths`,
    );
  }
  if (files.length === 0) throw new Error('no file paths');
  return { files, dirs };
}

/** Paths, one per line (blank lines and lines starting with # are skipped), with problems by line number. */
export function parsePathList(text: string, label: string): { paths: string[]; problems: string[] } {
  const paths: string[] = [];
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const problem = pathProblem(line);
    if (problem) problems.push(`${label} line ${index + 1}: "${line.slice(0, 80)}" ${problem}`);
    else paths.push(line);
  });
  if (paths.length === 0 && problems.length === 0) problems.push(`${label}: no paths (one absolute path per line, e.g. /projects/docs/README.md)`);
  return { paths, problems };
}

/**
 * A trace: JSON lines `{"op": "edit", "target": "/a/b.txt", "time": 12.5}`, time in seconds (any
 * origin) or an ISO-8601 timestamp. Entries are sorted by time and start at 0.
 */
export function parseTrace(text: string, label: string): { entries: TraceEntry[]; problems: string[] } {
  const problems: string[] = [];
  const raw: Array<{ op: OpKind; target: string; ms: number }> = [];
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '') return;
    const where = `${label} line ${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      problems.push(`${where}: not JSON (expected {"op": "edit", "target": "/a/b.txt", "time": 12.5})`);
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${where}: expected a JSON object with op, target and time`);
      return;
    }
    const { op, target, time, ...rest } = value as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0) problems.push(`${where}: unknown field ${extra.map((key) => `"${key}"`).join(', ')} (fields: op, target, time)`);
    if (typeof op !== 'string' || !OP_KINDS.includes(op as OpKind))
      problems.push(`${where}: op must be one of ${OP_KINDS.join(', ')} (got ${JSON.stringify(op)})`);
    const targetProblem = typeof target === 'string' ? pathProblem(target) : 'is required (a string)';
    if (targetProblem) problems.push(`${where}: target ${targetProblem}`);
    const ms = typeof time === 'number' ? time * 1000 : typeof time === 'string' ? Date.parse(time) : Number.NaN;
    if (!Number.isFinite(ms) || (typeof time === 'number' && time < 0)) {
      problems.push(`${where}: time must be seconds (a number >= 0) or an ISO-8601 timestamp (got ${JSON.stringify(time)})`);
    }
    if (problems.length === 0) raw.push({ op: op as OpKind, target: target as string, ms });
  });
  if (raw.length === 0 && problems.length === 0) problems.push(`${label}: no operations`);
  raw.sort((a, b) => a.ms - b.ms);
  const origin = raw[0]?.ms ?? 0;
  return { entries: raw.map(({ op, target, ms }) => ({ op, target, atMs: Math.round(ms - origin) })), problems };
}

/** The tree a trace implies when no paths are given: its file targets, and its rename targets as directories. */
export function treeFromTrace(entries: readonly TraceEntry[]): Tree {
  return treeFromPaths(
    entries.filter((entry) => entry.op !== 'rename').map((entry) => entry.target),
    entries.filter((entry) => entry.op === 'rename').map((entry) => entry.target),
  );
}

/** A trace's operations over a tree: a rename touches every file below its directory. */
export function traceOperations(entries: readonly TraceEntry[], tree: Tree): Operation[] {
  const dirs = new Map(tree.dirs.map((dir) => [dir.path, dir]));
  return entries.map((entry) => {
    if (entry.op !== 'rename') return { kind: entry.op, target: entry.target, files: [entry.target] };
    const dir = dirs.get(entry.target);
    if (!dir) throw new Error(`the trace renames ${entry.target}, which is no directory of the tree`);
    return { kind: 'rename', target: entry.target, files: dir.files };
  });
}

/** Seconds the replay of a trace takes at `speed` (2 = twice as fast as recorded); at least 1. */
export function traceSeconds(entries: readonly TraceEntry[], speed: number): number {
  return Math.max(1, Math.ceil((entries.at(-1)?.atMs ?? 0) / 1000 / speed));
}

/**
 * The user's tree and operations for a workload, from the files the orchestrator wrote (`read` gives
 * a file's text: k6's open, Node's readFileSync). Empty when the workload is generated.
 */
export function userWorkloadOf(
  workload: Pick<WorkloadConfig, 'pathsFile' | 'traceFile'>,
  read: (file: string) => string,
): { tree?: Tree; sequence?: Operation[]; trace?: TraceEntry[] } {
  const { pathsFile, traceFile } = workload;
  const paths = pathsFile ? parsePathList(read(pathsFile), pathsFile).paths : undefined;
  const trace = traceFile ? parseTrace(read(traceFile), traceFile).entries : undefined;
  const tree = paths ? treeFromPaths(paths) : trace ? treeFromTrace(trace) : undefined;
  if (!tree) return {};
  return { tree, ...(trace ? { trace, sequence: traceOperations(trace, tree) } : {}) };
}
