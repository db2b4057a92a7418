/** What answers on the node's port: this project's node, something else, or nothing. */
import { existsSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { httpGet } from '../lib/http-probe.js';
import { waitUntil } from '../lib/wait.js';
import { LocalEsError, localNode } from './node.js';

/** Whether something accepts connections on 127.0.0.1:port. */
export async function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** This project's node answers on the node's port: its cluster name (the single node's, a fault cluster's), or the one given. */
export async function isRunning(node = localNode(), clusterName = node.clusterName): Promise<boolean> {
  // Elasticsearch's minimal build has no `GET /` handler; cluster health names the cluster in both products.
  const answer = await httpGet(`${node.url}/_cluster/health`, 2000);
  if (answer.status !== 200 || !('body' in answer)) return false;
  try {
    return (JSON.parse(answer.body) as { cluster_name?: string }).cluster_name === clusterName;
  } catch {
    return false;
  }
}

export interface WaitForClusterOptions {
  /** How the error names the server. */
  product?: string;
  /** A reason to stop waiting at once (the server process has died). */
  abandonIf?: () => string | undefined;
}

/** Waits for the cluster to be at least yellow; on timeout the error carries the end of the node's log. */
export async function waitForCluster(url: string, timeoutMs: number, logFile?: string, options: WaitForClusterOptions = {}): Promise<void> {
  const outcome = await waitUntil(
    async () => {
      const answer = await httpGet(`${url}/_cluster/health?wait_for_status=yellow&timeout=2s`, 4000);
      return answer.status === 200 || ('error' in answer ? answer.error : `status ${answer.status}`);
    },
    { timeoutMs, intervalMs: 500, ...(options.abandonIf ? { abandonIf: options.abandonIf } : {}) },
  );
  if (outcome.ready) return;
  const tail = logFile && existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n') : '';
  const why = outcome.abandoned ? `stopped before it was ready: ${outcome.reason}` : `was not ready within ${timeoutMs} ms`;
  throw new LocalEsError(`${options.product ?? 'Elasticsearch'} at ${url} ${why}.${tail ? `\nLast log lines (${logFile}):\n${tail}` : ''}`);
}
