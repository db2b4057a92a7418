/** Elasticsearch and OpenSearch refuse to run as root: as root, the node runs as a system user of its own. */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cacheDir, type LocalNode } from './node.js';

const SERVICE_USER = 'eslocks';
/** Besides the distribution's own variables: runuser starts from a clean environment. */
const ALWAYS_PASSED = ['PATH', 'LANG'];

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

/** The argv that runs `command` as `user` (or as we are) with `env`, of which `user` gets `passed` (plus PATH and LANG). */
export function commandAs(user: string | undefined, env: NodeJS.ProcessEnv, command: string[], passed: string[]): string[] {
  if (!user) return command;
  const pairs = [...passed, ...ALWAYS_PASSED].filter((key) => env[key] !== undefined).map((key) => `${key}=${env[key]}`);
  return ['runuser', '-u', user, '--', 'env', ...pairs, ...command];
}
