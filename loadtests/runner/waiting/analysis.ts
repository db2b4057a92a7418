/**
 * What a waiting run measured, from its calls alone (pure): the wait of every grant, who overtook
 * whom, how long writers waited while later readers went first, and the lock store's requests per
 * grant. The scenario (scenario.ts) records the calls; the renderers (render/waiting.ts) show these figures.
 */
import type { LockMode } from '../../shared/workload.js';
import { percentile } from '../engine/probe-result.js';
import { noRequests, type PerKind } from '../model.js';

/** How callers wait for a lock that is held. */
export type WaitMode = 'polling' | 'queueing';
export const WAIT_MODES: readonly WaitMode[] = ['polling', 'queueing'];

/** One caller's try for one lock: from its arrival to its grant, or to the end of its budget. All times epoch ms (Date.now, the engine's clock). */
export interface WaitCall {
  caller: number;
  key: string;
  mode: LockMode;
  /** When the caller arrived (before its first acquire request). */
  arrivedAt: number;
  /**
   * Its place in the order the overtakes are judged by. Polling, and a queueing caller granted at
   * once: its arrival. A queueing caller served from the queue: the instant the engine put its ticket
   * in the queue (the grant's instant minus its `waitedMs`). Queue positions come from conditional
   * writes on the one lock document, so this is the queue's own order; the arrival would also count,
   * as overtakes, callers whose ticket writes crossed (two arrivals within a write of each other, or a
   * ticket write that lost a version conflict and was written again after a later caller's).
   */
  orderAt: number;
  /** The grant's instant as the engine wrote it (the lease's expiry minus its TTL). */
  grantedAt?: number;
  /** When the caller had its grant (acquire returned): the end of its wait. */
  heldAt?: number;
  /** The budget ran out first. */
  gaveUpAt?: number;
  /** The engine answered an error (not a busy lock): the call ended there. */
  failedAt?: number;
  /** Acquire requests the caller sent (polling: one per try; queueing: usually one). */
  attempts: number;
}

export interface WaitFigures {
  mode: WaitMode;
  grants: number;
  timeouts: number;
  /** Calls that ended in an error other than a busy lock. */
  errors: number;
  /** Wait of every grant (heldAt - arrivedAt), ms. */
  wait: { p50: number; p90: number; p99: number; max: number };
  /** Writers alone and readers alone: p99 and max. */
  writerWait: { p99: number; max: number };
  readerWait: { p99: number; max: number };
  /** Sum over grants of the earlier, incompatible callers on the same key still waiting that it went before. */
  overtakes: number;
  /** Grants that went before at least one such caller. */
  overtakingGrants: number;
  /** Writers that readers who arrived after them went before, and the longest wait among those writers (0: none). */
  writersPassedByReaders: number;
  writerLongestWaitPassed: number;
  /** Acquire requests per grant (polling: tries). */
  attemptsPerGrant: number;
  /** Every lock store request of the run (acquires, waits, releases, the calls that gave up) per grant, and by kind. */
  requestsPerGrant: number;
  requestsPerGrantByKind: PerKind;
  /** The acquire side alone (tries, queue looks, leaving the queue), per grant. */
  acquireRequestsPerGrant: number;
  /** The wait's distribution: the wait in ms at each percentile 0..100. */
  quantiles: number[];
}

const incompatible = (a: LockMode, b: LockMode): boolean => a === 'exclusive' || b === 'exclusive';

/**
 * Overtakes: for each grant g, the callers on the same key with an incompatible mode that came
 * before it in order (orderAt strictly earlier) and were granted after it. A caller that gave up is
 * not counted (it shows as a timeout). Writers passed by readers: a writer granted after a reader that
 * came after it.
 */
export function fairnessOf(
  calls: readonly WaitCall[],
): Pick<WaitFigures, 'overtakes' | 'overtakingGrants' | 'writersPassedByReaders' | 'writerLongestWaitPassed'> {
  const byKey = new Map<string, WaitCall[]>();
  for (const call of calls) if (call.grantedAt !== undefined) byKey.set(call.key, [...(byKey.get(call.key) ?? []), call]);
  let overtakes = 0;
  let overtakingGrants = 0;
  let writersPassedByReaders = 0;
  let writerLongestWaitPassed = 0;
  for (const granted of byKey.values()) {
    // In grant order: the callers granted after g are the ones later in this list.
    const sorted = [...granted].sort((a, b) => a.grantedAt! - b.grantedAt!);
    for (let i = 0; i < sorted.length; i++) {
      const g = sorted[i]!;
      let passed = 0;
      for (let j = i + 1; j < sorted.length; j++) {
        const other = sorted[j]!;
        if (other.grantedAt! <= g.grantedAt!) continue; // granted in the same instant (one hand-over)
        if (other.orderAt < g.orderAt && incompatible(other.mode, g.mode)) passed++;
      }
      overtakes += passed;
      if (passed > 0) overtakingGrants++;
      if (g.mode === 'exclusive') {
        const passedBy = sorted.some((r) => r.mode === 'shared' && r.orderAt > g.orderAt && r.grantedAt! < g.grantedAt!);
        if (passedBy) {
          writersPassedByReaders++;
          writerLongestWaitPassed = Math.max(writerLongestWaitPassed, g.heldAt! - g.arrivedAt);
        }
      }
    }
  }
  return { overtakes, overtakingGrants, writersPassedByReaders, writerLongestWaitPassed };
}

function tail(waits: number[]): { p99: number; max: number } {
  const sorted = [...waits].sort((a, b) => a - b);
  return { p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 };
}

/** The figures of one mode's run: its calls and the lock store requests it sent (in all, and the acquire side). */
export function waitFigures(mode: WaitMode, calls: readonly WaitCall[], requests: { all: PerKind; acquire: PerKind }, errors = 0): WaitFigures {
  const granted = calls.filter((call) => call.heldAt !== undefined);
  const waitOf = (call: WaitCall): number => call.heldAt! - call.arrivedAt;
  const waits = granted.map(waitOf).sort((a, b) => a - b);
  const grants = granted.length;
  const per = (value: number): number => (grants > 0 ? value / grants : 0);
  const sum = (kinds: PerKind): number => Object.values(kinds).reduce((total, value) => total + value, 0);
  const byKind = noRequests();
  for (const kind of Object.keys(byKind) as Array<keyof PerKind>) byKind[kind] = per(requests.all[kind]);
  return {
    mode,
    grants,
    timeouts: calls.filter((call) => call.gaveUpAt !== undefined).length,
    errors,
    wait: { p50: percentile(waits, 50), p90: percentile(waits, 90), p99: percentile(waits, 99), max: waits.at(-1) ?? 0 },
    writerWait: tail(granted.filter((call) => call.mode === 'exclusive').map(waitOf)),
    readerWait: tail(granted.filter((call) => call.mode === 'shared').map(waitOf)),
    ...fairnessOf(calls),
    attemptsPerGrant: per(granted.reduce((total, call) => total + call.attempts, 0)),
    requestsPerGrant: per(sum(requests.all)),
    requestsPerGrantByKind: byKind,
    acquireRequestsPerGrant: per(sum(requests.acquire)),
    quantiles: Array.from({ length: 101 }, (_, p) => percentile(waits, p)),
  };
}
