/** Runs a node's start script as a daemon: the one start path of the single node and of every cluster node. */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { LocalEsError, type LocalNode, nodePid } from './node.js';
import { commandAs } from './service-user.js';

export interface Launch {
  javaHome: string;
  configDir: string;
  heap: string;
  /** Run as this user (we are root), or as we are. */
  serviceUser: string | undefined;
  /** Who failed, in the error: "Elasticsearch", "fault-2". */
  label: string;
}

/** What the start script and the server printed before the server's own log took over. */
export const launchOutputFile = (node: LocalNode): string => join(node.nodeDir, 'logs', 'launch.out');

export function launchOutput(node: LocalNode): string {
  const file = launchOutputFile(node);
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

/** Returns once the start script has forked the server; the caller waits for it to answer. */
export function launchNode(node: LocalNode, { javaHome, configDir, heap, serviceUser, label }: Launch): void {
  const { env: names, bin } = node.distribution;
  rmSync(node.pidFile, { force: true });
  const env = {
    ...process.env,
    [names.javaHome]: javaHome,
    [names.pathConf]: configDir,
    [names.tmpDir]: join(node.nodeDir, 'tmp'),
    [names.javaOpts]: `-Xms${heap} -Xmx${heap}`,
  };
  const argv = commandAs(serviceUser, env, [join(node.installDir, 'bin', bin), '-d', '-p', node.pidFile], Object.values(names));
  // A file, not pipes: OpenSearch's daemon keeps the script's stdout and stderr open for its whole
  // life, and spawnSync would wait for them to close.
  const output = openSync(launchOutputFile(node), 'w');
  try {
    const result = spawnSync(argv[0]!, argv.slice(1), { cwd: join(node.nodeDir, 'logs'), env, stdio: ['ignore', output, output] });
    if (result.status !== 0) {
      throw new LocalEsError(`${label} failed to start (exit ${result.status}).\n${launchOutput(node)}\nLogs: ${node.logFile}`);
    }
  } finally {
    closeSync(output);
  }
}

/**
 * For waitUntil's abandonIf: why the launched server is known to be gone (its pid file names a dead
 * process). OpenSearch's script returns 0 as soon as it has forked, so a server that dies while
 * starting is only seen here.
 */
export function launchedServerGone(node: LocalNode): string | undefined {
  if (!existsSync(node.pidFile) || nodePid(node)) return undefined;
  const output = launchOutput(node).trim().split('\n').slice(-20).join('\n');
  return `its process exited${output ? `; it printed:\n${output}` : ''}`;
}
