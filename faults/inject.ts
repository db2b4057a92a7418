/**
 * The fault injector of one run: a while after the clients start, it does to the cluster what the
 * fault says (kill, pause or cut off a node) and undoes it, and answers one line saying what happened.
 * Faults that live in the clients (crash-holders, clock-skew, ...) only get their line here.
 */
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
      return { what: DESCRIPTIONS[fault], injected: true };
  }
  if (context.stopped()) return { what: 'not injected: the run was over first', injected: false };
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
