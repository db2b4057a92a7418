/**
 * Makes the emulator's virtualenv once per machine: python3 -m venv, then pip installs the pinned
 * requirements (PyPI, about a minute). A marker holding the requirements is written last, so an
 * interrupted install is redone and a changed requirements file reinstalls. One install at a time.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withLockFile } from '../lib/lock-file.js';
import { which } from '../lib/which.js';
import { AwsEmulatorError, EMULATOR_PYTHON_ENV, EMULATOR_URL_ENV, type LocalEmulator, MOTO_VERSION, REQUIREMENTS_FILE } from './emulator.js';

export const venvPython = (emulator: LocalEmulator): string => join(emulator.venvDir, 'bin', 'python');

/** Whether the virtualenv holds what the requirements file asks for. */
export function isInstalled(emulator: LocalEmulator): boolean {
  if (!existsSync(emulator.installedMarker) || !existsSync(venvPython(emulator))) return false;
  return readFileSync(emulator.installedMarker, 'utf8') === readFileSync(REQUIREMENTS_FILE, 'utf8');
}

function run(argv: string[], what: string): void {
  const result = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}`.trim().split('\n').slice(-15).join('\n');
    throw new AwsEmulatorError(`${what} failed (exit ${result.status}): ${argv.join(' ')}\n${output}`);
  }
}

/** The interpreter to build the virtualenv from: AWS_EMULATOR_PYTHON, else python3; moto 5.2.5 needs 3.10 or newer. */
function basePython(): string {
  const python = process.env[EMULATOR_PYTHON_ENV]?.trim() || 'python3';
  if (!python.includes('/') && !which(python)) {
    throw new AwsEmulatorError(
      `${python} is needed once to install the AWS emulator (moto); install Python 3.10+, set ${EMULATOR_PYTHON_ENV}, or set ${EMULATOR_URL_ENV}.`,
    );
  }
  const version = spawnSync(python, ['-c', 'import sys; print(sys.version_info >= (3, 10))'], { encoding: 'utf8' });
  if (version.stdout?.trim() !== 'True')
    throw new AwsEmulatorError(`${python} must be Python 3.10 or newer for moto ${MOTO_VERSION} (set ${EMULATOR_PYTHON_ENV})`);
  return python;
}

/**
 * A virtualenv with pip where the venv module has ensurepip; without it (Debian's python3 without
 * python3-venv), a bare virtualenv filled by the base interpreter's own pip (`pip --python`, pip 22.3+).
 */
function makeVenv(python: string, emulator: LocalEmulator, log: (line: string) => void): string[] {
  const pip = ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '--requirement', REQUIREMENTS_FILE];
  const withPip = spawnSync(python, ['-m', 'venv', emulator.venvDir], { encoding: 'utf8' });
  if (withPip.status === 0) return [venvPython(emulator), ...pip];
  log(`python -m venv failed (${(withPip.stderr ?? '').trim().split('\n').at(-1)}); trying a virtualenv without pip, filled by ${python}'s pip`);
  rmSync(emulator.venvDir, { recursive: true, force: true });
  run([python, '-m', 'venv', '--without-pip', emulator.venvDir], 'python -m venv --without-pip');
  return [python, '-m', 'pip', '--python', venvPython(emulator), ...pip.slice(2)];
}

/** Installs moto into the cached virtualenv unless it is there; waits while another process installs it. */
export async function ensureInstalled(emulator: LocalEmulator, log: (line: string) => void): Promise<void> {
  if (isInstalled(emulator)) return;
  await withLockFile(
    `${emulator.venvDir}.lock`,
    { timeoutMs: 600_000, timedOut: (detail) => new AwsEmulatorError(`another process is installing the AWS emulator ${detail}`) },
    async () => {
      if (isInstalled(emulator)) return;
      const python = basePython();
      rmSync(emulator.venvDir, { recursive: true, force: true });
      log(`installing moto ${MOTO_VERSION} into ${emulator.venvDir} (once per machine, about a minute)`);
      const install = makeVenv(python, emulator, log);
      run(install, `pip install of moto ${MOTO_VERSION}`);
      const check = spawnSync(venvPython(emulator), ['-c', 'import moto.server, moto.stepfunctions.parser.models; print(moto.__version__)'], {
        encoding: 'utf8',
      });
      if (check.stdout?.trim() !== MOTO_VERSION)
        throw new AwsEmulatorError(`the installed moto does not import as ${MOTO_VERSION}: ${check.stdout}${check.stderr}`);
      writeFileSync(emulator.installedMarker, readFileSync(REQUIREMENTS_FILE, 'utf8'));
    },
  );
}
