/**
 * Safety checker: reads the critical sections k6 logged and verifies that
 *   1. no two conflicting holds overlapped in time, and
 *   2. fencing tokens of conflicting holds only grew in start order.
 *
 * Two holds conflict when they belong to the same granularity and namespace and their lock sets conflict:
 *   global   - always, unless both are shared;
 *   document - they share an id and at least one is exclusive;
 *   tree     - one path equals or is an ancestor of the other and at least one is exclusive.
 *
 * Times come from the k6 clock (start: after acquire returned; end: before release was sent), so a
 * real overlap means the service granted a conflicting lock while another holder still worked.
 * An overlap that starts after the earlier holder's lease had expired is lease semantics (the holder
 * was too slow), not a locking bug: it is reported as a warning, and the fencing check still applies.
 */
import { type Granularity, HOLD_MARKER, type HoldRecord } from '../shared/workload.js';

export type { HoldRecord };

export interface Finding {
  kind: 'overlap' | 'fencing' | 'expired-overlap' | 'phantom';
  granularity: Granularity;
  namespace: string;
  first: HoldRecord;
  second: HoldRecord;
  message: string;
}

export interface SafetyReport {
  ok: boolean;
  holds: number;
  /** Number of holds per namespace. */
  namespaces: Record<string, number>;
  violations: Finding[];
  /** Total violations, even beyond the ones kept in `violations`. */
  violationCount: number;
  warnings: Finding[];
  warningCount: number;
  /**
   * Semantic conflicts the locks did not prevent: an operation on a path under a directory that
   * another holder was renaming at the same time (a file created in /a while /a moved). Not a
   * locking bug (the locks did what they promise), but the granularity is unsafe for the workload.
   */
  phantoms: Finding[];
  phantomCount: number;
}

const MAX_KEPT = 50;

export function isAncestorOrSelf(ancestor: string, path: string): boolean {
  return ancestor === path || path.startsWith(ancestor.endsWith('/') ? ancestor : `${ancestor}/`);
}

/** Whether two holds of the same granularity and namespace must never overlap. */
export function holdsConflict(a: HoldRecord, b: HoldRecord): boolean {
  if (a.granularity !== b.granularity || a.namespace !== b.namespace) return false;
  if (a.mode === 'shared' && b.mode === 'shared') return false;
  switch (a.granularity) {
    case 'global':
      return true;
    case 'document': {
      const ids = new Set(a.keys);
      return b.keys.some((id) => ids.has(id));
    }
    case 'tree':
      return a.keys.some((p) => b.keys.some((q) => isAncestorOrSelf(p, q) || isAncestorOrSelf(q, p)));
  }
}

function describe(hold: HoldRecord): string {
  const keys = hold.keys.length > 3 ? `${hold.keys.slice(0, 3).join(', ')}, ... (${hold.keys.length} keys)` : hold.keys.join(', ');
  return `${hold.op} ${hold.mode} [${keys}] by ${hold.owner} fence ${hold.fence} held ${hold.start}..${hold.end} (lease until ${hold.expiresAt})`;
}

function ancestorsOrSelf(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  const result: string[] = [];
  for (let i = 1; i <= parts.length; i++) result.push(`/${parts.slice(0, i).join('/')}`);
  return result;
}

/** Largest fence seen so far, per key, for all holds and for exclusive holds only. */
class FenceIndex {
  private readonly all = new Map<string, HoldRecord>();
  private readonly exclusive = new Map<string, HoldRecord>();

  /** The earlier hold with the largest fence among those at `key` that conflict with a hold in `mode`. */
  max(key: string, mode: HoldRecord['mode']): HoldRecord | undefined {
    return (mode === 'exclusive' ? this.all : this.exclusive).get(key);
  }

  add(key: string, hold: HoldRecord): void {
    const bump = (map: Map<string, HoldRecord>): void => {
      const current = map.get(key);
      if (!current || BigInt(current.fence) < BigInt(hold.fence)) map.set(key, hold);
    };
    bump(this.all);
    if (hold.mode === 'exclusive') bump(this.exclusive);
  }
}

/** For each hold, the earlier conflicting hold with the largest fence (the one it must exceed). */
function fencingPredecessor(hold: HoldRecord, exact: FenceIndex, subtree: FenceIndex): HoldRecord | undefined {
  let worst: HoldRecord | undefined;
  const consider = (candidate: HoldRecord | undefined): void => {
    if (candidate && (!worst || BigInt(candidate.fence) > BigInt(worst.fence))) worst = candidate;
  };
  switch (hold.granularity) {
    case 'global':
      consider(exact.max('*', hold.mode));
      break;
    case 'document':
      for (const id of hold.keys) consider(exact.max(id, hold.mode));
      break;
    case 'tree':
      for (const path of hold.keys) {
        // Earlier holds on this path or an ancestor, then earlier holds anywhere below it.
        for (const ancestor of ancestorsOrSelf(path)) consider(exact.max(ancestor, hold.mode));
        consider(subtree.max(path, hold.mode));
      }
      break;
  }
  return worst;
}

function recordFence(hold: HoldRecord, exact: FenceIndex, subtree: FenceIndex): void {
  if (hold.granularity === 'global') exact.add('*', hold);
  else if (hold.granularity === 'document') for (const id of hold.keys) exact.add(id, hold);
  else {
    for (const path of hold.keys) {
      exact.add(path, hold);
      for (const ancestor of ancestorsOrSelf(path)) subtree.add(ancestor, hold);
    }
  }
}

function byStart(a: HoldRecord, b: HoldRecord): number {
  return a.start - b.start || a.end - b.end;
}

function checkNamespace(holds: HoldRecord[], push: (finding: Finding) => void): void {
  const sorted = [...holds].sort(byStart);
  // 1. Overlaps: sweep in start order, keeping the holds that have not ended yet.
  let active: HoldRecord[] = [];
  for (const hold of sorted) {
    active = active.filter((other) => other.end > hold.start);
    for (const other of active) {
      if (!holdsConflict(other, hold)) continue;
      const expired = Number.isFinite(other.expiresAt) && hold.start >= other.expiresAt;
      push({
        kind: expired ? 'expired-overlap' : 'overlap',
        granularity: hold.granularity,
        namespace: hold.namespace,
        first: other,
        second: hold,
        message: expired
          ? `granted after the earlier lease expired (holder too slow): ${describe(other)} / ${describe(hold)}`
          : `conflicting holds overlapped for ${Math.min(other.end, hold.end) - hold.start} ms: ${describe(other)} / ${describe(hold)}`,
      });
    }
    active.push(hold);
  }
  // 2. Fencing: every hold's token must exceed the tokens of all earlier conflicting holds.
  const exact = new FenceIndex();
  const subtree = new FenceIndex();
  for (const hold of sorted) {
    const predecessor = fencingPredecessor(hold, exact, subtree);
    if (predecessor && BigInt(predecessor.fence) >= BigInt(hold.fence)) {
      push({
        kind: 'fencing',
        granularity: hold.granularity,
        namespace: hold.namespace,
        first: predecessor,
        second: hold,
        message: `fencing token did not grow (${predecessor.fence} then ${hold.fence}): ${describe(predecessor)} / ${describe(hold)}`,
      });
    }
    recordFence(hold, exact, subtree);
  }
}

/**
 * Holds that worked under a directory while another holder renamed it, over the same interval.
 * Only holds that say what they worked on (`target`) are judged.
 */
function findPhantoms(holds: HoldRecord[], push: (finding: Finding) => void): void {
  const renames = holds.filter((hold) => hold.op === 'rename' && hold.target !== undefined).sort(byStart);
  if (renames.length === 0) return;
  const others = holds.filter((hold) => hold.target !== undefined).sort(byStart);
  for (const rename of renames) {
    const dir = rename.target!;
    for (const other of others) {
      if (other.start >= rename.end) break;
      if (other === rename || other.end <= rename.start) continue;
      if (other.target === dir || !isAncestorOrSelf(dir, other.target!)) continue;
      push({
        kind: 'phantom',
        granularity: rename.granularity,
        namespace: rename.namespace,
        first: rename,
        second: other,
        message: `${other.op} of ${other.target} ran while ${dir} was being renamed (${Math.min(rename.end, other.end) - Math.max(rename.start, other.start)} ms together): ${describe(rename)} / ${describe(other)}`,
      });
    }
  }
}

export function checkHolds(holds: HoldRecord[]): SafetyReport {
  const groups = new Map<string, HoldRecord[]>();
  for (const hold of holds) {
    const key = `${hold.granularity}\u0000${hold.namespace}`;
    const group = groups.get(key);
    if (group) group.push(hold);
    else groups.set(key, [hold]);
  }
  const report: SafetyReport = {
    ok: true,
    holds: holds.length,
    namespaces: {},
    violations: [],
    violationCount: 0,
    warnings: [],
    warningCount: 0,
    phantoms: [],
    phantomCount: 0,
  };
  for (const group of groups.values()) {
    const first = group[0]!;
    report.namespaces[first.namespace] = group.length;
    checkNamespace(group, (finding) => {
      if (finding.kind === 'expired-overlap') {
        report.warningCount++;
        if (report.warnings.length < MAX_KEPT) report.warnings.push(finding);
      } else {
        report.violationCount++;
        if (report.violations.length < MAX_KEPT) report.violations.push(finding);
      }
    });
    findPhantoms(group, (finding) => {
      report.phantomCount++;
      if (report.phantoms.length < MAX_KEPT) report.phantoms.push(finding);
    });
  }
  report.ok = report.violationCount === 0;
  return report;
}

function isHold(value: unknown): value is HoldRecord {
  if (!value || typeof value !== 'object') return false;
  const hold = value as Record<string, unknown>;
  return (
    (hold.granularity === 'global' || hold.granularity === 'document' || hold.granularity === 'tree') &&
    typeof hold.namespace === 'string' &&
    (hold.mode === 'exclusive' || hold.mode === 'shared') &&
    Array.isArray(hold.keys) &&
    hold.keys.every((key) => typeof key === 'string') &&
    (Number.isSafeInteger(hold.fence) || (typeof hold.fence === 'string' && /^\d{1,19}$/.test(hold.fence))) &&
    typeof hold.start === 'number' &&
    typeof hold.end === 'number'
  );
}

/**
 * Extracts hold records from a k6 console-output file. Accepts k6's JSON log format
 * ({"msg":"LTHOLD {...}"}), its text format (msg="LTHOLD {...}") and raw lines.
 */
export function parseHoldLog(text: string): { holds: HoldRecord[]; malformed: number; errors: string[] } {
  const holds: HoldRecord[] = [];
  const errors: string[] = [];
  let malformed = 0;
  for (const line of text.split('\n')) {
    if (!line.includes(HOLD_MARKER.trim()) && !line.includes('LTERROR')) continue;
    let message: string | undefined = line;
    if (line.startsWith('{')) {
      try {
        message = String((JSON.parse(line) as { msg?: unknown }).msg ?? '');
      } catch {
        message = undefined;
      }
    } else {
      const quoted = /msg="((?:[^"\\]|\\.)*)"/.exec(line);
      if (quoted) {
        try {
          message = JSON.parse(`"${quoted[1]}"`) as string;
        } catch {
          message = undefined;
        }
      }
    }
    if (message === undefined) {
      malformed++;
      continue;
    }
    if (message.startsWith('LTERROR')) {
      errors.push(message.slice('LTERROR'.length).trim());
      continue;
    }
    const at = message.indexOf(HOLD_MARKER);
    if (at < 0) continue;
    try {
      const parsed: unknown = JSON.parse(message.slice(at + HOLD_MARKER.length));
      if (isHold(parsed)) holds.push(parsed);
      else malformed++;
    } catch {
      malformed++;
    }
  }
  return { holds, malformed, errors };
}

export function formatSafety(granularity: string, report: SafetyReport, malformed = 0, file = 'the safety JSON file'): string {
  const lines: string[] = [];
  if (report.ok) {
    lines.push(
      `safety ${granularity}: OK - ${report.holds} critical sections, no conflicting overlap, fencing tokens only grew` +
        (report.warningCount ? ` (${report.warningCount} grants after an expired lease)` : '') +
        (malformed ? ` (${malformed} unreadable log lines)` : ''),
    );
  } else {
    lines.push(`safety ${granularity}: VIOLATION - ${report.violationCount} violation(s) in ${report.holds} critical sections`);
    for (const violation of report.violations.slice(0, 10)) lines.push(`  [${violation.kind}] ${violation.message}`);
    if (report.violationCount > 10) lines.push(`  ... ${report.violationCount - 10} more (see ${file})`);
  }
  if (report.phantomCount > 0) {
    lines.push(
      `semantic conflicts ${granularity}: ${report.phantomCount} operation(s) ran under a directory while it was being renamed ` +
        `(the locks did not cover them), e.g. ${report.phantoms[0]!.message}`,
    );
  }
  return lines.join('\n');
}
