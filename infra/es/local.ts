/**
 * The project's own Elasticsearch: Elastic's minimal test distribution from Maven Central,
 * cached per user outside the clone, run on loopback by a non-root user.
 *
 * Only used when ES_URL is not set; users with a cluster of their own never reach this file.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';

/** Newest 9.x on Maven Central that is not 9.5.0-9.5.2 (bulk writes could skip replicas). Keep in step with the client in package.json. */
export const ES_VERSION = '9.4.3';
const MINIMUM_JAVA = 21;
const SERVICE_USER = 'eslocks';

export interface LocalNode {
  version: string;
  port: number;
  url: string;
  installDir: string;
  nodeDir: string;
  logFile: string;
  pidFile: string;
}

export class LocalEsError extends Error {
  override name = 'LocalEsError';
}

const isRoot = (): boolean => process.getuid?.() === 0;

/**
 * Root's home is not readable by the service user Elasticsearch must run as, so root caches in
 * /var/cache; everyone else in their XDG cache. ES_LOCKS_CACHE overrides both.
 */
export function cacheDir(): string {
  if (process.env.ES_LOCKS_CACHE) return process.env.ES_LOCKS_CACHE;
  if (isRoot()) return '/var/cache/es-lease-locks';
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'es-lease-locks');
}

export function localNode(port = Number(process.env.ES_LOCAL_PORT ?? 9200)): LocalNode {
  const root = cacheDir();
  const nodeDir = join(root, 'nodes', `${ES_VERSION}-${port}`);
  return {
    version: ES_VERSION,
    port,
    url: `http://127.0.0.1:${port}`,
    installDir: join(root, `elasticsearch-${ES_VERSION}`),
    nodeDir,
    logFile: join(nodeDir, 'logs', 'es-lease-locks.log'),
    pidFile: join(nodeDir, 'es.pid'),
  };
}

function which(command: string): string | undefined {
  const result = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

function javaMajor(javaHome: string): number | undefined {
  const release = join(javaHome, 'release');
  if (!existsSync(release) || !existsSync(join(javaHome, 'bin', 'java'))) return undefined;
  const match = /JAVA_VERSION="(\d+)/.exec(readFileSync(release, 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/** ES_JAVA_HOME wins; otherwise the newest JDK of 21 or newer under /usr/lib/jvm. */
export function findJavaHome(): string {
  const explicit = process.env.ES_JAVA_HOME;
  if (explicit) {
    const major = javaMajor(explicit);
    if (!major || major < MINIMUM_JAVA) {
      throw new LocalEsError(`ES_JAVA_HOME=${explicit} is not a JDK ${MINIMUM_JAVA}+ (found ${major ?? 'no JDK'}).`);
    }
    return explicit;
  }
  const jvmRoot = '/usr/lib/jvm';
  const candidates = existsSync(jvmRoot)
    ? readdirSync(jvmRoot)
        .map((name) => join(jvmRoot, name))
        .map((home) => ({ home, major: javaMajor(home) ?? 0 }))
        .filter((jdk) => jdk.major >= MINIMUM_JAVA)
        .sort((a, b) => b.major - a.major)
    : [];
  const best = candidates[0];
  if (!best) {
    throw new LocalEsError(
      `Elasticsearch ${ES_VERSION} needs a JDK ${MINIMUM_JAVA} or newer and none was found under ${jvmRoot}. ` +
        'Install one (for example a Temurin JDK) or point ES_JAVA_HOME at it, or set ES_URL to use an existing cluster.',
    );
  }
  return best.home;
}

function ensureInstalled(node: LocalNode, log: (line: string) => void): void {
  if (existsSync(join(node.installDir, 'bin', 'elasticsearch'))) return;
  if (!which('mvn')) {
    throw new LocalEsError('Maven (mvn) is needed once to fetch Elasticsearch from Maven Central; install it or set ES_URL.');
  }
  const downloads = join(cacheDir(), 'downloads');
  mkdirSync(downloads, { recursive: true });
  const artifact = `org.elasticsearch.distribution.integ-test-zip:elasticsearch:${ES_VERSION}:zip`;
  log(`fetching ${artifact} with mvn (once per machine, about 120 MB)`);
  execFileSync('mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=${artifact}`, `-DoutputDirectory=${downloads}`], {
    stdio: 'inherit',
  });
  const zip = join(downloads, `elasticsearch-${ES_VERSION}.zip`);
  const staging = `${node.installDir}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  execFileSync('unzip', ['-q', zip, '-d', staging], { stdio: 'inherit' });
  // Rename last so that an interrupted unpack is never mistaken for an install.
  execFileSync('mv', [join(staging, `elasticsearch-${ES_VERSION}`), node.installDir]);
  rmSync(staging, { recursive: true, force: true });
}

function ensureServiceUser(): string | undefined {
  if (!isRoot()) return undefined;
  const exists = spawnSync('id', ['-u', SERVICE_USER]).status === 0;
  if (!exists) {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', SERVICE_USER], { stdio: 'inherit' });
  }
  return SERVICE_USER;
}

function writeNodeConfig(node: LocalNode): string {
  const configDir = join(node.nodeDir, 'config');
  mkdirSync(configDir, { recursive: true });
  mkdirSync(join(node.nodeDir, 'data'), { recursive: true });
  mkdirSync(join(node.nodeDir, 'logs'), { recursive: true });
  mkdirSync(join(node.nodeDir, 'tmp'), { recursive: true });
  for (const file of readdirSync(join(node.installDir, 'config'))) {
    if (file !== 'elasticsearch.yml') cpSync(join(node.installDir, 'config', file), join(configDir, file), { recursive: true });
  }
  writeFileSync(
    join(configDir, 'elasticsearch.yml'),
    [
      'cluster.name: es-lease-locks',
      `node.name: local-${node.port}`,
      'discovery.type: single-node',
      'network.host: 127.0.0.1',
      `http.port: ${node.port}`,
      'transport.port: 0',
      `path.data: ${join(node.nodeDir, 'data')}`,
      `path.logs: ${join(node.nodeDir, 'logs')}`,
      // Loopback only, test node: the distribution ships the security module, which would demand TLS and passwords.
      'xpack.security.enabled: false',
      // Small CI disks must not flip the lock index to read-only.
      'cluster.routing.allocation.disk.threshold_enabled: false',
      '',
    ].join('\n'),
  );
  return configDir;
}

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

async function clusterName(url: string): Promise<string | undefined> {
  try {
    // This minimal build has no `GET /` handler; cluster health names the cluster too.
    const response = await fetch(`${url}/_cluster/health`, { signal: AbortSignal.timeout(2000) });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { cluster_name?: string };
    return body.cluster_name;
  } catch {
    return undefined;
  }
}

function readPid(node: LocalNode): number | undefined {
  if (!existsSync(node.pidFile)) return undefined;
  const pid = Number(readFileSync(node.pidFile, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

export async function isRunning(node = localNode()): Promise<boolean> {
  return (await clusterName(node.url)) === 'es-lease-locks';
}

export async function waitUntilReady(url: string, timeoutMs: number, logFile?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${url}/_cluster/health?wait_for_status=yellow&timeout=2s`, {
        signal: AbortSignal.timeout(4000),
      });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const tail = logFile && existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n') : '';
  throw new LocalEsError(`Elasticsearch at ${url} was not ready within ${timeoutMs} ms.${tail ? `\nLast log lines (${logFile}):\n${tail}` : ''}`);
}

/** Starts the local node unless it already runs; returns whether this call started it. */
export async function startLocal(
  options: { port?: number; log?: (line: string) => void; heap?: string } = {},
): Promise<{ node: LocalNode; started: boolean }> {
  const log = options.log ?? ((line: string) => console.error(`[es] ${line}`));
  const node = localNode(options.port);
  if (await isRunning(node)) return { node, started: false };
  if (await portAnswers(node.port)) {
    throw new LocalEsError(
      `Port ${node.port} is taken by something that is not this project's Elasticsearch. ` +
        'Stop it, choose another port with ES_LOCAL_PORT, or point ES_URL at it if it is an Elasticsearch you want to use.',
    );
  }
  const javaHome = findJavaHome();
  ensureInstalled(node, log);
  const configDir = writeNodeConfig(node);
  const serviceUser = ensureServiceUser();
  if (serviceUser) {
    execFileSync('chown', ['-R', `${serviceUser}:${serviceUser}`, node.nodeDir]);
    // The service user reads the shared install; only the node folder is its own.
    execFileSync('chmod', ['-R', 'a+rX', node.installDir]);
    execFileSync('chmod', ['a+rx', cacheDir(), join(cacheDir(), 'nodes')]);
  }
  rmSync(node.pidFile, { force: true });
  const env = {
    ...process.env,
    ES_JAVA_HOME: javaHome,
    ES_PATH_CONF: configDir,
    ES_TMPDIR: join(node.nodeDir, 'tmp'),
    ES_JAVA_OPTS: `-Xms${options.heap ?? '512m'} -Xmx${options.heap ?? '512m'}`,
  };
  const command = [join(node.installDir, 'bin', 'elasticsearch'), '-d', '-p', node.pidFile];
  log(`starting Elasticsearch ${ES_VERSION} on ${node.url} (java ${javaHome}${serviceUser ? `, user ${serviceUser}` : ''})`);
  const argv = serviceUser ? ['runuser', '-u', serviceUser, '--', 'env', ...envPairs(env), ...command] : command;
  const result = spawnSync(argv[0]!, argv.slice(1), { cwd: join(node.nodeDir, 'logs'), env, encoding: 'utf8' });
  if (result.status !== 0) {
    throw new LocalEsError(`Elasticsearch failed to start (exit ${result.status}).\n${result.stderr}${result.stdout}\nLogs: ${node.logFile}`);
  }
  await waitUntilReady(node.url, 120_000, node.logFile);
  log(`ready on ${node.url}; logs in ${node.logFile}`);
  return { node, started: true };
}

function envPairs(env: NodeJS.ProcessEnv): string[] {
  const keep = ['ES_JAVA_HOME', 'ES_PATH_CONF', 'ES_TMPDIR', 'ES_JAVA_OPTS', 'PATH', 'LANG'];
  return keep.filter((key) => env[key] !== undefined).map((key) => `${key}=${env[key]}`);
}

export async function stopLocal(options: { port?: number } = {}): Promise<boolean> {
  const node = localNode(options.port);
  const pid = readPid(node);
  if (!pid) return false;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  process.kill(pid, 'SIGKILL');
  return true;
}

export function whoAmI(): string {
  return userInfo().username;
}
