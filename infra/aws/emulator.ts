/**
 * The project's own AWS API emulator: moto in server mode (Step Functions, SQS, EventBridge and the
 * rest of moto), from a virtualenv cached per user outside the clone, on 127.0.0.1:5005
 * (AWS_EMULATOR_PORT). AWS_EMULATOR_URL names an emulator of the user's own instead, and then
 * nothing here starts or stops anything.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../../tools/cli/flags.js';
import { cacheDir, portFromEnv } from '../es/node.js';

export const MOTO_VERSION = '5.2.5';

/** What pip installs: moto[server] and every dependency, pinned. */
export const REQUIREMENTS_FILE = fileURLToPath(new URL('./requirements.txt', import.meta.url));

export const EMULATOR_PORT_ENV = 'AWS_EMULATOR_PORT';
export const EMULATOR_URL_ENV = 'AWS_EMULATOR_URL';
/** The interpreter the virtualenv is made from (python3 on PATH by default). */
export const EMULATOR_PYTHON_ENV = 'AWS_EMULATOR_PYTHON';
export const DEFAULT_PORT = 5005;

export class AwsEmulatorError extends Error {
  override name = 'AwsEmulatorError';
}

export interface LocalEmulator {
  version: string;
  port: number;
  url: string;
  /** The virtualenv (shared by every port). */
  venvDir: string;
  /** Written last by the install: what was installed (the requirements file's text). */
  installedMarker: string;
  /** One folder per port: pid file, log, start lock. */
  nodeDir: string;
  pidFile: string;
  logFile: string;
}

/** The emulator on `port` (AWS_EMULATOR_PORT, else 5005), with its files under the project's cache. */
export function localEmulator(port?: number): LocalEmulator {
  const root = cacheDir();
  const chosen = port ?? portFromEnv(EMULATOR_PORT_ENV, DEFAULT_PORT);
  const venvDir = join(root, 'tools', `moto-${MOTO_VERSION}`);
  const nodeDir = join(root, 'nodes', `moto-${MOTO_VERSION}-${chosen}`);
  return {
    version: MOTO_VERSION,
    port: chosen,
    url: `http://127.0.0.1:${chosen}`,
    venvDir,
    installedMarker: join(venvDir, '.installed'),
    nodeDir,
    pidFile: join(nodeDir, 'moto.pid'),
    logFile: join(nodeDir, 'moto.log'),
  };
}

/** AWS_EMULATOR_URL when set, checked: an http(s) URL. Undefined when unset or blank. */
export function emulatorUrlFromEnv(): string | undefined {
  const text = process.env[EMULATOR_URL_ENV]?.trim();
  if (!text) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.hostname === '') {
    throw new UsageError(`${EMULATOR_URL_ENV}: must be an http(s) URL such as http://127.0.0.1:${DEFAULT_PORT} (got "${text}")`);
  }
  return text.replace(/\/$/, '');
}
