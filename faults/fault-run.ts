/**
 * One run of one fault: a fresh lock index (one replica) on the cluster, the clients for the run's
 * time while the injector does its fault, the cluster back to all its nodes, then the history checked
 * and written to the results folder (the soak keeps only the histories of runs with a violation).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLockService, createSearchClient, deleteLockIndex, ensureLockIndex } from '../functions/store/index.js';
import { type ClusterNode, waitForNodes } from '../infra/es/cluster.js';
import type { LockService } from '../packages/engine/src/service.js';
import { behaviourOf, type Fault } from './catalog.js';
import { checkHistory } from './checker.js';
import type { HistoryEvent, Violation } from './history.js';
import { injectFault } from './inject.js';
import type { Firewall } from './partition.js';
import { clockOffsets } from './skew.js';
import { FaultNotifier, type WakeTally } from './wake.js';
import { Deliveries, emptyWorkTally, runOperator, runWorkClient, type WorkTally } from './work-once.js';
import { CLAIM_WINDOW_MS, REWAKE_AFTER_MS, runClient, type Tally, type Workload } from './workload.js';

export interface RunSettings {
  durationS: number;
  clients: number;
  workload: Workload;
  /** Primary shards of the run's lock index (default 1). */
  shards?: number;
  /** Where the history goes; `keep: 'violations'` writes it only when the checker found something. */
  results: { dir: string; name: string; keep: 'always' | 'violations' };
  firewall?: Firewall;
  /** Counted live across runs (the soak); the run adds its own to it. */
  tally: Tally;
  /** The run stops early when this says so (the soak reached its target). */
  enough?: () => boolean;
}

export interface RunResult {
  fault: Fault;
  what: string;
  injected: boolean;
  durationMs: number;
  cycles: number;
  grants: number;
  conflicts: number;
  unknown: number;
  errors: Record<string, number>;
  violations: Violation[];
  longestGapMs: number;
  primaryTerms: number[];
  clockOffsetsMs: number[];
  historyFile?: string;
  /** The waiters woken by a channel: how many, what they were told, how their calls ended, what the notifier did to the messages. */
  wake?: WakeTally;
  /** Acquires with wake that answered a grant instead of queued (the engine must never). */
  grantedAtOnce?: number;
  /** The fencing epochs of the grants (more than one when the run re-created the lock index). */
  epochs: number[];
  /** work-revoke: what the work clients and the operator did. */
  work?: WorkTally;
}

/** A client for the cluster, of the product its nodes run. */
const clusterClient = (nodes: readonly ClusterNode[], requestTimeoutMs: number) =>
  createSearchClient({ product: nodes[0]!.distribution.name, url: nodes.map((node) => node.url), requestTimeoutMs });

/** Lock indices that an interrupted earlier run left on the cluster (a run deletes its own at its end): they only take the nodes' memory. */
export async function removeLeftoverIndices(nodes: readonly ClusterNode[], log: (line: string) => void): Promise<void> {
  const client = clusterClient(nodes, 30_000);
  try {
    const names = Object.keys(await client.indices.get({ index: 'faults-*', expand_wildcards: 'all', allow_no_indices: true, ignore_unavailable: true }));
    if (names.length === 0) return;
    log(`removing ${names.length} lock ${names.length === 1 ? 'index' : 'indices'} left by an interrupted run`);
    await client.indices.delete({ index: names }, { ignore: [404] });
  } finally {
    await client.close();
  }
}

export async function runFault(fault: Fault, settings: RunSettings, nodes: readonly ClusterNode[], log: (line: string) => void): Promise<RunResult> {
  const behaviour = behaviourOf(fault);
  const client = clusterClient(nodes, 5_000);
  const index = `faults-${fault}-${randomBytes(3).toString('hex')}`;
  // The run's skew allowance is the lock index's shared setting: every engine of the run works with it.
  await ensureLockIndex(client, index, {
    ...(settings.shards ? { shards: settings.shards } : {}),
    sharedSettings: { maxClockSkewMs: behaviour.maxClockSkewMs },
  });
  await client.cluster.health({ index, wait_for_status: 'green', timeout: '60s' });
  const history: HistoryEvent[] = [];
  // Waiters woken by a channel, told through a notifier in memory that loses, repeats, throws and says gone;
  // the sweeper reserves for them, wakes again the reserved ones that did not claim, and tells the expired.
  const notifier = new FaultNotifier();
  const { service: engine, store } = createLockService({
    client,
    index,
    settings: {
      maxClockSkewMs: behaviour.maxClockSkewMs,
      ...(settings.workload.retryMaxDelayMs ? { retry: { maxDelayMs: settings.workload.retryMaxDelayMs } } : {}),
      notifier,
      // Short, so that lapsed reservations and wake-ups again happen within a run.
      queue: { claimWindowMs: CLAIM_WINDOW_MS, rewakeAfterMs: REWAKE_AFTER_MS },
    },
  });
  const before = { ...settings.tally };
  const startedAt = Date.now();
  const durationMs = settings.durationS * 1_000;
  const until = startedAt + durationMs;
  const enough = settings.enough ?? (() => false);
  const running = (): boolean => Date.now() < until && !enough();
  const offsets = clockOffsets(settings.clients, behaviour.clockSpreadMs);
  const skew = behaviour.clockSpreadMs > 0 ? `, clocks ${Math.min(...offsets)}..+${Math.max(...offsets)} ms` : '';
  log(`${fault}: ${settings.clients} clients, ${settings.workload.granularity} locks, ${settings.durationS} s${skew}`);
  const progress = setInterval(
    () => log(`${fault}: ${Math.round((Date.now() - startedAt) / 1000)} s, ${settings.tally.grants - before.grants} grants`),
    10_000,
  );
  const wake = { notifier, grantedAtOnce: 0 };
  const context = {
    store,
    settings: engine.settings,
    workload: settings.workload,
    behaviour,
    history,
    tally: settings.tally,
    running,
    wake,
  };
  // work-revoke: the clients run work that runs once, and an operator revokes.
  const workTally = emptyWorkTally();
  const deliveries = new Deliveries(settings.workload.keys, Math.random, workTally);
  const work = behaviour.workOnce ? { store, settings: engine.settings, history, deliveries, work: workTally, tally: settings.tally, running } : undefined;
  const clients = offsets.map((offset, id) => (work ? runWorkClient(work, id, offset) : runClient(context, id, offset)));
  let injection: Awaited<ReturnType<typeof injectFault>>;
  try {
    [injection] = await Promise.all([
      injectFault(fault, {
        client,
        index,
        nodes,
        firewall: settings.firewall,
        startedAt,
        durationMs,
        stopped: () => !running(),
        log,
        waiting: () => notifier.waiting(),
      }),
      ...clients,
      ...(work ? [runOperator(work, settings.workload.keys)] : []),
      sweepWhile(engine, running),
    ]);
  } finally {
    clearInterval(progress);
  }
  const endedAt = Date.now();
  await waitForNodes([...nodes], nodes.length, 120_000);
  // Every client has returned, so every channel waiter's call has ended (told, or its own channel's
  // timeout): the tally says how.
  const told = notifier.count();
  // Grants only: an acquire answered with a recorded result holds nothing.
  const grants = history.filter((event) => event.op === 'acquire' && event.type === 'ok' && event.leaseId).sort((a, b) => a.time - b.time);
  const errors: Record<string, number> = {};
  for (const event of history) if (event.error) errors[`${event.op} ${event.error}`] = (errors[`${event.op} ${event.error}`] ?? 0) + 1;
  const times = [startedAt, ...grants.map((event) => event.time), Math.min(until, endedAt)];
  const longestGapMs = Math.max(...times.slice(1).map((time, position) => time - times[position]!));
  // A token is [epoch ×10¹⁶ +] term × 10¹³ + seq_no: the term is the three digits above the sequence number.
  const primaryTerms = [...new Set(grants.map((event) => Number((BigInt(event.fencingToken!) / 10n ** 13n) % 1000n)))].sort((a, b) => a - b);
  const epochs = [...new Set(grants.map((event) => Number(BigInt(event.fencingToken!) / 10n ** 16n)))].sort((a, b) => a - b);
  // Every event's time is the runner's clock, skewed clients' lease ends included: no allowance needed.
  const violations = checkHistory(history, { maxClockSkewMs: 0 });
  let historyFile: string | undefined;
  if (settings.results.keep === 'always' || violations.length > 0) {
    historyFile = join(settings.results.dir, `${settings.results.name}.history.json`);
    writeFileSync(
      historyFile,
      JSON.stringify({ fault, index, clockOffsetsMs: offsets, behaviour, violations, wake: told, ...(work ? { work: work.work } : {}), history }),
    );
  }
  await deleteLockIndex(client, index).catch(() => undefined);
  await client.close();
  return {
    fault,
    ...injection,
    durationMs: endedAt - startedAt,
    cycles: settings.tally.cycles - before.cycles,
    grants: settings.tally.grants - before.grants,
    conflicts: settings.tally.conflicts - before.conflicts,
    unknown: settings.tally.unknown - before.unknown,
    errors,
    violations,
    longestGapMs,
    primaryTerms,
    epochs,
    clockOffsetsMs: offsets,
    ...(historyFile ? { historyFile } : {}),
    wake: told,
    grantedAtOnce: wake.grantedAtOnce,
    ...(work ? { work: work.work } : {}),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The sweeper, every half second while the run lasts (a failing sweep waits for the next). */
async function sweepWhile(engine: LockService, running: () => boolean): Promise<void> {
  while (running()) {
    await sleep(500);
    await engine.sweep().catch(() => undefined);
  }
}
