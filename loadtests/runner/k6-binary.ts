/**
 * The pinned k6 binary: `ensureK6()` for the orchestrator and `npm run k6:install` (commands/k6-install.ts).
 *
 * No npm package ships the k6 binary, so we build the pinned version once per machine with
 * `go install` into a per-user cache folder outside the clone (fresh CI clones reuse it).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { userCacheDir } from '../../infra/lib/user-cache.js';
import { which } from '../../infra/lib/which.js';

export const K6_VERSION = 'v1.8.1';
export const K6_MODULE = 'go.k6.io/k6';
const MINIMUM_GO: [number, number] = [1, 25];

export class K6InstallError extends Error {
  override name = 'K6InstallError';
}

/** $K6_CACHE, else tools/ in the user cache (next to Elasticsearch). */
export function toolsCacheDir(): string {
  return process.env.K6_CACHE ?? join(userCacheDir(), 'tools');
}

export function cachedK6Path(): string {
  return join(toolsCacheDir(), `k6-${K6_VERSION}`, 'k6');
}

/** The version a k6 binary reports ("k6 v1.8.1 (commit/..., go1.26.8, linux/amd64)"), or undefined. */
export function k6VersionOf(binary: string): string | undefined {
  const result = spawnSync(binary, ['version'], { encoding: 'utf8', timeout: 15_000 });
  if (result.status !== 0) return undefined;
  return /\bk6 (v\d+\.\d+\.\d+\S*)/.exec(result.stdout)?.[1];
}

/** "go version go1.26.8 linux/amd64" -> [1, 26]; undefined when it cannot be parsed. */
export function parseGoVersion(output: string): [number, number] | undefined {
  const match = /\bgo(\d+)\.(\d+)/.exec(output.replace(/^go version /, ''));
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

function checkGo(): string {
  const go = which('go') ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  const need = `${MINIMUM_GO[0]}.${MINIMUM_GO[1]}`;
  if (!go) {
    throw new K6InstallError(
      `k6 ${K6_VERSION} is not installed and Go is missing, so it cannot be built. ` +
        `Install Go ${need} or newer (https://go.dev/dl/), or put k6 ${K6_VERSION} on PATH, then rerun.`,
    );
  }
  const output = spawnSync(go, ['version'], { encoding: 'utf8' }).stdout ?? '';
  const version = parseGoVersion(output);
  if (!version || version[0] < MINIMUM_GO[0] || (version[0] === MINIMUM_GO[0] && version[1] < MINIMUM_GO[1])) {
    throw new K6InstallError(
      `k6 ${K6_VERSION} needs Go ${need} or newer to build; found "${output.trim() || 'no version'}" at ${go}. ` +
        `Upgrade Go, or put k6 ${K6_VERSION} on PATH.`,
    );
  }
  return go;
}

async function build(log: (line: string) => void): Promise<string> {
  const go = checkGo();
  const finalDir = join(toolsCacheDir(), `k6-${K6_VERSION}`);
  const tempDir = `${finalDir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(tempDir, { recursive: true });
  log(`building k6 ${K6_VERSION} with go install, about 1-2 minutes, once per machine (into ${finalDir})`);
  const started = Date.now();
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(go, ['install', `${K6_MODULE}@${K6_VERSION}`], {
        env: { ...process.env, GOBIN: tempDir, GOFLAGS: [process.env.GOFLAGS, '-buildvcs=false'].filter(Boolean).join(' ') },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      const ticker = setInterval(() => log(`  still building k6 (${Math.round((Date.now() - started) / 1000)} s)`), 20_000);
      child.once('error', (error) => {
        clearInterval(ticker);
        reject(error);
      });
      child.once('exit', (exitCode) => {
        clearInterval(ticker);
        resolve(exitCode);
      });
    });
    const built = join(tempDir, 'k6');
    if (code !== 0 || !existsSync(built)) {
      throw new K6InstallError(`go install ${K6_MODULE}@${K6_VERSION} failed (exit ${code}); see the output above.`);
    }
    // Rename last: an interrupted build leaves only a .tmp folder, never a half-written k6.
    try {
      renameSync(tempDir, finalDir);
    } catch (error) {
      // Another process finished the same build first; use theirs.
      if (!existsSync(join(finalDir, 'k6'))) throw error;
    }
    log(`k6 ${K6_VERSION} built in ${Math.round((Date.now() - started) / 1000)} s`);
    return join(finalDir, 'k6');
  } finally {
    rmSync(tempDir, { recursive: true, force: true });
  }
}

/** Path of a k6 binary at exactly K6_VERSION: the one on PATH if it matches, else the cached build (built on first use). */
export async function ensureK6(log: (line: string) => void = (line) => console.error(`[k6] ${line}`)): Promise<string> {
  const onPath = which('k6');
  if (onPath && k6VersionOf(onPath) === K6_VERSION) return onPath;
  const cached = cachedK6Path();
  if (existsSync(cached)) {
    if (k6VersionOf(cached) === K6_VERSION) return cached;
    log(`cached k6 at ${cached} does not report ${K6_VERSION}; rebuilding`);
    rmSync(join(toolsCacheDir(), `k6-${K6_VERSION}`), { recursive: true, force: true });
  }
  const binary = await build(log);
  if (k6VersionOf(binary) !== K6_VERSION) {
    throw new K6InstallError(`the k6 built at ${binary} does not report ${K6_VERSION}`);
  }
  return binary;
}
