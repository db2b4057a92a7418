/**
 * The load-test workload, shared by the k6 scripts and the node orchestrator (pure code: no k6 or
 * node imports, so both runtimes can load it).
 *
 * A file-system tree is generated deterministically from its shape and seed; operations (read a
 * file, edit a file, rename a directory) pick their targets with a configurable skew; each lock
 * granularity turns an operation into its own lock request.
 */
import type { Granularity, LockMode } from '../../packages/client/src/wire/granularities.ts';
import { seededRandom } from '../../tools/shared/seeded-random.ts';
import type { Objective } from './objective.ts';

// The service's granularities, as the product lists them: the kit measures each one it has. From the
// wire module's own file: k6 loads files as named, and wire.ts re-exports by `.js` names only tsc maps.
export { GRANULARITY_NAMES, type Granularity, type LockMode } from '../../packages/client/src/wire/granularities.ts';
export type OpKind = 'read' | 'edit' | 'rename' | 'create' | 'delete';
export const OP_KINDS: readonly OpKind[] = ['read', 'edit', 'rename', 'create', 'delete'];

export interface TreeShape {
  /** Directory levels below the root (1 = only top-level directories). */
  depth: number;
  /** Subdirectories per directory (and top-level directories). */
  fanout: number;
  /** Files in every directory. */
  filesPerDir: number;
  /** Seed for the names and for the hot-spot placement. */
  seed: number;
}

export type Skew =
  | { kind: 'uniform' }
  /** Zipf-like: the k-th most popular target has weight 1 / k^s. */
  | { kind: 'zipf'; s: number }
  /** hotFraction of the targets get hotTraffic of the picks (e.g. 10% of files get 90% of traffic). */
  | { kind: 'hotspot'; hotFraction: number; hotTraffic: number };

/** Relative weights of the operations (they need not add up to 100). */
export interface Mix {
  read: number;
  edit: number;
  rename: number;
  /** A new file in an existing directory: its id exists in no document lock until it is written. */
  create?: number;
  delete?: number;
}

/** Every weight of a mix, absent ones as 0. */
export function mixWeights(mix: Mix): Record<OpKind, number> {
  return { read: mix.read, edit: mix.edit, rename: mix.rename, create: mix.create ?? 0, delete: mix.delete ?? 0 };
}

export interface WorkloadConfig {
  name: string;
  tree: TreeShape;
  mix: Mix;
  /** Time spent inside the lock (the simulated work), in ms. */
  criticalSectionMs: number;
  skew: Skew;
  /** The user's tree: a file of paths, one per line, written by the orchestrator (replaces `tree`). */
  pathsFile?: string;
  /** The user's operations: a JSON-lines trace ({op, target, atMs}), written by the orchestrator (replaces `mix`). */
  traceFile?: string;
  /** Replay speed of the trace at the expected rate: 2 = twice as fast as recorded. */
  traceSpeed?: number;
  /** Where the user's tree and operations came from, in words (for the reports). */
  origin?: { tree?: string; operations?: string };
}

export interface RetryPolicy {
  /** Give up an operation when the next retry would start after this long since its first attempt. */
  budgetMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Wait at least the server's retryAfterMs (capped by maxDelayMs) before retrying a conflict. */
  honourRetryAfter: boolean;
}

/** Everything one k6 invocation needs (passed as JSON in the LT_CONFIG environment variable). */
export interface K6RunConfig {
  runId: string;
  granularity: Granularity;
  namespace: string;
  workload: WorkloadConfig;
  steady: { rate: number; durationS: number };
  /** Offered-load steps of the ramping-arrival-rate scenario; empty: no ramp. */
  ramp: { levels: number[]; stepS: number; transitionS: number; startAfterS: number };
  retry: RetryPolicy;
  ttlMs: number;
  /** The service level objective: the run's k6 thresholds on the steady stage (objective.ts). */
  objective: Objective;
  /** The steady phase replays the workload's trace at its own timing (× traceSpeed) instead of a constant rate. */
  replay?: boolean;
  vus: { preAllocated: number; max: number };
  /** Grace for in-flight iterations at the end of each scenario. */
  gracefulStopS: number;
}

export interface DirNode {
  path: string;
  depth: number;
  /** Every file in this directory and below, in tree order. */
  files: string[];
}

export interface Tree {
  files: string[];
  /** Every directory except the root, in tree order. */
  dirs: DirNode[];
}

export interface Operation {
  kind: OpKind;
  /** The file (read, edit) or the directory (rename). */
  target: string;
  /** The files the operation touches. */
  files: string[];
}

export interface LockPlan {
  granularity: Granularity;
  mode: LockMode;
  ids?: string[];
  path?: string;
  /** What the safety checker compares: '*' for global, the ids for document, the path for tree. */
  keys: string[];
}

/** Lock requests carry at most this many ids; keep every directory's file count below it. */
export const MAX_IDS_PER_REQUEST = 500;

const DIR_WORDS = [
  'clinton',
  'projects',
  'elasticsearch',
  'lucene',
  'kibana',
  'docs',
  'src',
  'main',
  'test',
  'java',
  'config',
  'scripts',
  'assets',
  'reports',
  'archive',
  'drafts',
  'notes',
  'shared',
  'legal',
  'finance',
  'design',
  'infra',
  'ops',
  'people',
  'photos',
  'music',
  'mail',
  'backups',
  'vendor',
  'tools',
];
const FILE_WORDS = [
  'README.txt',
  'index.md',
  'notes.txt',
  'todo.md',
  'build.gradle',
  'pom.xml',
  'main.go',
  'app.ts',
  'report.pdf',
  'budget.xlsx',
  'plan.docx',
  'photo.jpg',
  'LICENSE',
  'CHANGELOG.md',
  'config.yml',
  'data.csv',
];

function uniqueNames(words: readonly string[], count: number, random: () => number): string[] {
  const names: string[] = [];
  const used = new Set<string>();
  for (let i = 0; i < count; i++) {
    const word = words[Math.floor(random() * words.length)] ?? 'item';
    let name = word;
    for (let n = 2; used.has(name); n++) {
      const dot = word.lastIndexOf('.');
      name = dot > 0 ? `${word.slice(0, dot)}-${n}${word.slice(dot)}` : `${word}-${n}`;
    }
    used.add(name);
    names.push(name);
  }
  return names;
}

/** Counts without building: directories, files, and the file count of the largest directory. */
export function treeStats(shape: TreeShape): { dirs: number; files: number; largestDirFiles: number } {
  let dirs = 0;
  let level = 1;
  for (let d = 1; d <= shape.depth; d++) {
    level *= shape.fanout;
    dirs += level;
  }
  let subtreeDirs = 0;
  level = 1;
  for (let d = 1; d <= shape.depth; d++) {
    subtreeDirs += level;
    level *= shape.fanout;
  }
  return { dirs, files: dirs * shape.filesPerDir, largestDirFiles: subtreeDirs * shape.filesPerDir };
}

/** Problems with a shape or workload, as readable sentences; empty when valid. */
export function validateWorkload(workload: WorkloadConfig): string[] {
  const problems: string[] = [];
  const { tree, mix, skew } = workload;
  const int = (value: number, min: number, label: string): void => {
    if (!Number.isInteger(value) || value < min) problems.push(`${label} must be an integer >= ${min} (got ${value})`);
  };
  int(tree.depth, 1, 'tree.depth');
  int(tree.fanout, 1, 'tree.fanout');
  int(tree.filesPerDir, 1, 'tree.filesPerDir');
  if (problems.length === 0) {
    const stats = treeStats(tree);
    if (stats.largestDirFiles >= MAX_IDS_PER_REQUEST) {
      problems.push(
        `the largest directory holds ${stats.largestDirFiles} files; a rename under the document granularity must lock ` +
          `fewer than ${MAX_IDS_PER_REQUEST} ids: shrink depth, fanout or filesPerDir`,
      );
    }
    if (stats.files > 20_000) problems.push(`the tree has ${stats.files} files; keep it under 20000`);
  }
  const weights = mixWeights(mix);
  for (const key of OP_KINDS) {
    if (!(weights[key] >= 0)) problems.push(`mix.${key} must be >= 0 (got ${weights[key]})`);
  }
  if (!(OP_KINDS.reduce((sum, key) => sum + weights[key], 0) > 0)) problems.push('the mix needs at least one operation with weight > 0');
  if (!(workload.criticalSectionMs >= 0)) problems.push(`criticalSectionMs must be >= 0 (got ${workload.criticalSectionMs})`);
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$/.test(workload.name)) {
    problems.push(`workload name "${workload.name}" must be 1-16 letters, digits, "-" or "_"`);
  }
  if (skew.kind === 'zipf' && !(skew.s > 0)) problems.push(`zipf exponent must be > 0 (got ${skew.s})`);
  if (skew.kind === 'hotspot') {
    if (!(skew.hotFraction > 0 && skew.hotFraction < 1)) problems.push(`hotFraction must be in (0, 1) (got ${skew.hotFraction})`);
    if (!(skew.hotTraffic >= 0 && skew.hotTraffic <= 1)) problems.push(`hotTraffic must be in [0, 1] (got ${skew.hotTraffic})`);
  }
  return problems;
}

/** The same shape always gives the same tree. */
export function buildTree(shape: TreeShape): Tree {
  const random = seededRandom(shape.seed);
  const files: string[] = [];
  const dirs: DirNode[] = [];
  const visit = (parent: string, depth: number): string[] => {
    const here: string[] = [];
    for (const name of uniqueNames(FILE_WORDS, shape.filesPerDir, random)) here.push(`${parent}/${name}`);
    files.push(...here);
    if (depth < shape.depth) {
      for (const name of uniqueNames(DIR_WORDS, shape.fanout, random)) {
        const node: DirNode = { path: `${parent}/${name}`, depth: depth + 1, files: [] };
        dirs.push(node);
        node.files = visit(node.path, depth + 1);
        here.push(...node.files);
      }
    }
    return here;
  };
  // The root holds no files of its own: every file sits in some directory that can be renamed.
  for (const name of uniqueNames(DIR_WORDS, shape.fanout, random)) {
    const node: DirNode = { path: `/${name}`, depth: 1, files: [] };
    dirs.push(node);
    node.files = visit(node.path, 1);
  }
  return { files, dirs };
}

/** Returns a picker of indexes in [0, n) following the skew; popular indexes are scattered by the seed. */
export function skewedPicker(n: number, skew: Skew, seed: number): (random: () => number) => number {
  if (n <= 0) throw new RangeError('cannot pick from an empty set');
  // A fixed shuffle decides which targets are popular, so hot files are spread over the tree.
  const order = Array.from({ length: n }, (_, i) => i);
  const shuffle = seededRandom(seed ^ 0x9e3779b9);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(shuffle() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  if (skew.kind === 'uniform') return (random) => order[Math.floor(random() * n)]!;
  if (skew.kind === 'hotspot') {
    const hot = Math.min(n, Math.max(1, Math.round(n * skew.hotFraction)));
    const cold = n - hot;
    return (random) => {
      if (cold === 0 || random() < skew.hotTraffic) return order[Math.floor(random() * hot)]!;
      return order[hot + Math.floor(random() * cold)]!;
    };
  }
  const cumulative: number[] = [];
  let total = 0;
  for (let k = 1; k <= n; k++) {
    total += 1 / k ** skew.s;
    cumulative.push(total);
  }
  return (random) => {
    const x = random() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return order[lo]!;
  };
}

/** The operations of a workload, drawn one at a time. */
export interface OperationSource {
  tree: Tree;
  /** Draws with `random` (Math.random in k6); a replayed trace gives its operation number `index` instead. */
  next(random: () => number, index?: number): Operation;
}

/**
 * Draws operations for one workload; `random` is the caller's source (Math.random in k6). With a
 * `sequence` (a replayed trace) the operations come in its order instead: `index` picks one.
 */
export function operationSource(workload: WorkloadConfig, user: { tree?: Tree; sequence?: Operation[] } = {}): OperationSource {
  const tree = user.tree ?? buildTree(workload.tree);
  const { sequence } = user;
  if (sequence && sequence.length > 0) {
    let counter = 0;
    return { tree, next: (_random, index) => sequence[(index ?? counter++) % sequence.length]! };
  }
  const pickFile = skewedPicker(tree.files.length, workload.skew, workload.tree.seed);
  const pickDir = skewedPicker(tree.dirs.length, workload.skew, workload.tree.seed + 1);
  const weights = mixWeights(workload.mix);
  const total = OP_KINDS.reduce((sum, key) => sum + weights[key], 0);
  let created = 0;
  return {
    tree,
    next(random) {
      let roll = random() * total;
      let kind: OpKind = 'read';
      for (const key of OP_KINDS) {
        if (roll < weights[key]) {
          kind = key;
          break;
        }
        roll -= weights[key];
      }
      if (kind === 'rename') {
        const dir = tree.dirs[pickDir(random)]!;
        return { kind, target: dir.path, files: dir.files };
      }
      if (kind === 'create') {
        // A name no file of the tree has: document locks know nothing of it until it exists.
        const dir = tree.dirs[pickDir(random)]!;
        const file = `${dir.path}/new-${(created++).toString(36)}-${Math.floor(random() * 1e9).toString(36)}.txt`;
        return { kind, target: file, files: [file] };
      }
      const file = tree.files[pickFile(random)]!;
      return { kind, target: file, files: [file] };
    },
  };
}

/** How a granularity locks an operation. */
export function lockPlan(granularity: Granularity, op: Operation): LockPlan {
  const mode: LockMode = op.kind === 'read' ? 'shared' : 'exclusive';
  switch (granularity) {
    case 'global':
      return { granularity: 'global', mode, keys: ['*'] };
    case 'document':
      // A rename locks every document under the directory, all or nothing in one request.
      return { granularity: 'document', mode, ids: [...op.files], keys: [...op.files] };
    case 'tree':
      return { granularity: 'tree', mode, path: op.target, keys: [op.target] };
  }
}

/**
 * The k6 stages of the ramp: for each level an optional linear transition from the previous level,
 * then a hold at the level (a zero-length stage when there is no transition makes the rate jump).
 */
export function rampStages(ramp: K6RunConfig['ramp']): Array<{ duration: string; target: number }> {
  const stages: Array<{ duration: string; target: number }> = [];
  for (const level of ramp.levels) {
    stages.push({ duration: `${ramp.transitionS}s`, target: level });
    stages.push({ duration: `${ramp.stepS - ramp.transitionS}s`, target: level });
  }
  return stages;
}

/**
 * The level an iteration of the ramp belongs to, from the time since the scenario started, or
 * undefined during a transition (those iterations count for no level).
 */
export function rampLevelAt(ramp: K6RunConfig['ramp'], elapsedMs: number): number | undefined {
  const stepMs = ramp.stepS * 1000;
  const index = Math.floor(elapsedMs / stepMs);
  if (index >= ramp.levels.length) return ramp.levels[ramp.levels.length - 1];
  if (elapsedMs - Math.max(0, index) * stepMs < ramp.transitionS * 1000) return undefined;
  return ramp.levels[Math.max(0, index)];
}

/** Metric tag values: 'steady' for the constant-rate phase, 'r<level>' for a ramp step, 'transition' between steps. */
export function stageTag(level: number | 'steady' | undefined): string {
  if (level === undefined) return 'transition';
  return level === 'steady' ? 'steady' : `r${level}`;
}

/**
 * Namespaces one run's operations spread over: every operation of a run (a probe of the engine-only
 * layer, a k6 run) is in the one namespace namespaceFor or probeNamespace names, so all of its locks
 * live on one shard of the lock index (the deployment model's shards add nothing for it).
 */
export const NAMESPACES_PER_RUN = 1;

/** Lock namespace of one run of one granularity (matches /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/). */
export function namespaceFor(granularity: Granularity, runId: string, workloadName: string): string {
  return `lt-${granularity}-${runId}-${workloadName}`.replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 64);
}

/** One critical section, as logged by k6 (prefixed with HOLD_MARKER) and read by the safety checker. */
export interface HoldRecord {
  granularity: Granularity;
  namespace: string;
  op: OpKind;
  mode: LockMode;
  keys: string[];
  /** The grant's fencing token: a decimal string (compare as integers, e.g. with BigInt). */
  fence: string | number;
  /** k6 clock (epoch ms) right after acquire returned. */
  start: number;
  /** k6 clock right before release was sent. */
  end: number;
  /** Server's lease expiry (epoch ms). */
  expiresAt: number;
  owner: string;
  /** What release answered ('released', 'expired', ...), or 'error'. */
  release?: string;
  /** The path the operation works on (a file, or the directory a rename moves). */
  target?: string;
}

export const HOLD_MARKER = 'LTHOLD ';
