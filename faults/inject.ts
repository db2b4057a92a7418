/**
 * The fault injector of one run: a while after the clients start, it does to the cluster what the
 * fault says (kill, pause or cut off a node) and undoes it, and answers one line saying what happened.
 * Faults that live in the clients (crash-holders, clock-skew, ...) only get their line here.
 */
import { epochOfIncarnation, LiveTicketsError, lockIndexShards, type RecreatedLockIndex, recreateLockIndex } from '../functions/store/index.js';
import type { SearchClient } from '../functions/store/search-client.js';
import { type ClusterNode, signalNode, startNode } from '../infra/es/cluster.js';
import { DESCRIPTIONS, type Fault, isPartition } from './catalog.js';
import type { Firewall } from './partition.js';
import { FAULTS_NAMESPACE } from './workload.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Which cluster node holds the primary of the shard the clients' namespace lives on, and which its replica. */
export async function shardNodes(
  client: SearchClient,
  index: string,
  nodes: readonly ClusterNode[],
): Promise<{ primary?: ClusterNode; replica?: ClusterNode }> {
  const response = await client.searchShards({ index, routing: FAULTS_NAMESPACE });
  const names = new Map(Object.entries(response.nodes).map(([id, node]) => [id, node.name]));
  const copies = response.shards.flat();
  const byCopy = (primary: boolean) =>
    nodes.find((node) => node.name === names.get(copies.find((copy) => copy.primary === primary && copy.state === 'STARTED')?.node ?? ''));
  return { primary: byCopy(true), replica: byCopy(false) };
}

export interface Injection {
  what: string;
  /** False when the fault did not happen (no victim found, the soak reached its target first). */
  injected: boolean;
}

export interface InjectContext {
  client: SearchClient;
  index: string;
  nodes: readonly ClusterNode[];
  firewall?: Firewall;
  startedAt: number;
  durationMs: number;
  /** The run ends early (the soak reached its target): a fault not yet injected is not. */
  stopped: () => boolean;
  log: (line: string) => void;
  /** Channel waiters queued that have heard nothing yet (recreate-index: their tickets go with the old incarnation). */
  waiting?: () => number;
}

/** How long a partition lasts: long enough for the cluster to remove the cut node and promote the replica (about 6-8 s here). */
export const CUT_MS = 15_000;

export async function injectFault(fault: Fault, context: InjectContext): Promise<Injection> {
  const { client, index, nodes, startedAt, durationMs, log } = context;
  await sleep(Math.min(8_000, durationMs / 4));
  switch (fault) {
    case 'crash-holders':
    case 'pause-holders':
    case 'stall-acquirers':
    case 'timeout-acquirers':
    case 'clock-skew':
    case 'clock-skew-beyond':
    case 'work-revoke':
      return { what: DESCRIPTIONS[fault], injected: true };
  }
  if (context.stopped()) return { what: 'not injected: the run was over first', injected: false };
  if (fault === 'recreate-index') return recreateIndex(context);
  const { primary, replica } = await shardNodes(client, index, nodes);
  const role = fault === 'kill-replica' ? 'replica' : 'primary';
  const victim = fault === 'kill-replica' ? replica : primary;
  if (!victim) return { what: `no ${role} found`, injected: false };
  const at = Math.round((Date.now() - startedAt) / 1000);
  if (fault === 'pause-primary') {
    const pauseMs = Math.min(20_000, durationMs / 2);
    log(`SIGSTOP ${victim.name} (primary) for ${pauseMs / 1000} s`);
    signalNode(victim, 'SIGSTOP');
    await sleep(pauseMs);
    signalNode(victim, 'SIGCONT');
    return { what: `${victim.name} paused ${pauseMs / 1000} s at ${at} s`, injected: true };
  }
  if (isPartition(fault)) {
    if (!context.firewall) return { what: 'no firewall', injected: false };
    const mode = fault === 'partition-reset' ? 'reset' : 'drop';
    const http = fault === 'partition-isolate';
    const cutMs = Math.min(CUT_MS, durationMs / 2);
    const cut = await context.firewall.cut(victim, nodes, { mode, http });
    log(
      `${victim.name} (primary) cut off: transport ${mode === 'reset' ? 'reset' : 'dropped'}${http ? ', HTTP dropped' : ''} (${cut.rules} rules) for ${cutMs / 1000} s`,
    );
    await sleep(cutMs);
    cut.heal();
    log(`${victim.name} healed`);
    const how = mode === 'reset' ? 'reset' : 'dropped';
    return { what: `${victim.name}'s transport ${how}${http ? ', HTTP too,' : ''} at ${at} s for ${cutMs / 1000} s`, injected: true };
  }
  log(`kill -9 ${victim.name} (${role})`);
  signalNode(victim, 'SIGKILL');
  await sleep(10_000);
  await startNode(victim, [...nodes], log);
  return { what: `${victim.name} killed at ${at} s, restarted 10 s later`, injected: true };
}

/**
 * What an operator does to re-create the lock index (docs/lock-index.md), mid-run: `recreateLockIndex`
 * deletes the alias's incarnation and makes the next one, one epoch up. Asked first without force, it
 * refuses while tickets are queued (their waiters would never be told); the run notes the refusal and
 * forces it, as an operator who cannot wait would. The leases of the old incarnation are gone with it
 * (a holder's renew fails, its release says not_held, its fencing token is below every new one), and
 * so are the queued tickets: their channel waiters are never told, and end on their own channel's timeout.
 */
async function recreateIndex(context: InjectContext): Promise<Injection> {
  const { client, index, startedAt, log } = context;
  const at = Math.round((Date.now() - startedAt) / 1000);
  const shards = await lockIndexShards(client, index);
  const options = shards ? { shards } : {};
  let refused = 'not refused: no live ticket';
  let recreated: RecreatedLockIndex;
  try {
    recreated = await recreateLockIndex(client, index, { ...options, force: false });
  } catch (error) {
    if (!(error instanceof LiveTicketsError)) throw error;
    const { tickets, withWake } = error.context;
    refused = `refused without force (${tickets} live tickets, ${withWake} on a wake channel)`;
    log(`re-creating ${index}: ${refused}; forcing it`);
    const waiting = context.waiting?.() ?? 0;
    recreated = await recreateLockIndex(client, index, { ...options, force: true });
    refused += `, forced: ${recreated.dropped} tickets dropped, ${waiting} channel waiters left to their own timeout`;
  }
  await client.cluster.health({ index, wait_for_status: 'green', timeout: '60s' });
  const epochs = `epoch ${recreated.previous ? epochOfIncarnation(recreated.previous) : '?'} -> ${recreated.epoch}`;
  log(`${index} is now ${recreated.index} (${epochs})`);
  return { what: `re-created at ${at} s (${epochs}): ${refused}`, injected: true };
}
