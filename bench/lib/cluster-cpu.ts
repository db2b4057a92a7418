/**
 * The cluster's own CPU, from its nodes' counters (`GET _nodes/stats/process`, on Elasticsearch and
 * OpenSearch alike): what a lock costs the shared cluster, which the benchmark's own CPU does not show.
 */
import type { SearchClient } from '../../functions/store/search-client.js';
import { sleep } from '../../infra/lib/wait.js';

/** One node's process counters: CPU used since it started, and when the node took them. */
interface NodeProcess {
  timestamp: number;
  cpuMillis: number;
}

type NodesProcess = Map<string, NodeProcess>;

interface NodesStatsAnswer {
  nodes?: Record<string, { process?: { timestamp?: number; cpu?: { total_in_millis?: number } } }>;
}

/** A reading this recent is still fresh: taken in the gap between two slices, it serves as the end of one and the start of the next. */
const REUSE_WITHIN_MS = 50;
/** A node refreshes its process stats at most once a second (monitor.process.refresh_interval): a fresh reading can take that long. */
const FRESH_WITHIN_MS = 3_000;
const POLL_EVERY_MS = 50;

export class ClusterCpuMeter {
  private last: { nodes: NodesProcess; receivedAt: number } | undefined;

  /** Give it a client of its own, so that its requests stay out of the counts of the client under test. */
  constructor(private readonly client: Pick<SearchClient, 'transport'>) {}

  /** CPU milliseconds used by all the cluster's nodes so far, as of now (not as of a node's cached stats). */
  async totalMillis(): Promise<number> {
    const nodes = await this.freshReading();
    return [...nodes.values()].reduce((sum, node) => sum + node.cpuMillis, 0);
  }

  private async freshReading(): Promise<NodesProcess> {
    if (this.last && performance.now() - this.last.receivedAt < REUSE_WITHIN_MS) return this.last.nodes;
    // The first answer may be a node's cached stats of up to a second ago: it only serves to tell a newer one.
    const previous = this.last?.nodes ?? (await this.read());
    const deadline = performance.now() + FRESH_WITHIN_MS;
    for (;;) {
      const nodes = await this.read();
      if (isNewer(nodes, previous) || performance.now() > deadline) {
        this.last = { nodes, receivedAt: performance.now() };
        return nodes;
      }
      await sleep(POLL_EVERY_MS);
    }
  }

  private async read(): Promise<NodesProcess> {
    const answer = bodyOf(await this.client.transport.request({ method: 'GET', path: '/_nodes/stats/process' })) as NodesStatsAnswer;
    const nodes: NodesProcess = new Map();
    for (const [id, node] of Object.entries(answer.nodes ?? {})) {
      const timestamp = node.process?.timestamp;
      const cpuMillis = node.process?.cpu?.total_in_millis;
      if (timestamp === undefined || cpuMillis === undefined) throw new Error(`_nodes/stats/process: node ${id} reports no process CPU`);
      nodes.set(id, { timestamp, cpuMillis });
    }
    return nodes;
  }
}

/** Every node took its stats after the previous reading (a node new to the cluster counts as newer). */
const isNewer = (nodes: NodesProcess, previous: NodesProcess): boolean =>
  [...nodes].every(([id, node]) => node.timestamp > (previous.get(id)?.timestamp ?? Number.NEGATIVE_INFINITY));

/** Elasticsearch's transport answers the body; OpenSearch's answers `{ body, statusCode, headers }`. */
function bodyOf(answer: unknown): unknown {
  const isEnvelope = typeof answer === 'object' && answer !== null && 'body' in answer && 'statusCode' in answer;
  return isEnvelope ? (answer as { body: unknown }).body : answer;
}
