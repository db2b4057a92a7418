/** Elasticsearch refuses to run as root: as root, the node runs as a system user of its own. */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cacheDir, type LocalNode } from './node.js';

const SERVICE_USER = 'eslocks';
/** What the node's start script needs; runuser starts from a clean environment. */
const PASSED_ENV = ['ES_JAVA_HOME', 'ES_PATH_CONF', 'ES_TMPDIR', 'ES_JAVA_OPTS', 'PATH', 'LANG'];

/** The user to run the node as (created when missing), or undefined when we are not root. */
export function serviceUserFor(node: LocalNode): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  if (spawnSync('id', ['-u', SERVICE_USER]).status !== 0) {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', SERVICE_USER], { stdio: 'inherit' });
  }
  execFileSync('chown', ['-R', `${SERVICE_USER}:${SERVICE_USER}`, node.nodeDir]);
  // The service user reads the shared install; only the node folder is its own.
  execFileSync('chmod', ['-R', 'a+rX', node.installDir]);
  execFileSync('chmod', ['a+rx', cacheDir(), join(cacheDir(), 'nodes')]);
  return SERVICE_USER;
}

/** The argv that runs `command` as `user` (or as we are) with `env`. */
export function commandAs(user: string | undefined, env: NodeJS.ProcessEnv, command: string[]): string[] {
  if (!user) return command;
  const pairs = PASSED_ENV.filter((key) => env[key] !== undefined).map((key) => `${key}=${env[key]}`);
  return ['runuser', '-u', user, '--', 'env', ...pairs, ...command];
}
