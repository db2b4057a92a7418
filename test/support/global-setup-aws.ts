/**
 * Stops, at the end of the run, the AWS emulator that a test file of this run started (test files
 * start it on demand with awsEmulatorUrl(), so a run that needs none starts none). One that already
 * ran before the run, or AWS_EMULATOR_URL's, is left alone.
 */
import { emulatorUrlFromEnv, localEmulator } from '../../infra/aws/emulator.js';
import { stopEmulator } from '../../infra/aws/local.js';
import { isRunning } from '../../infra/aws/probe.js';

let ranBefore = true;

export async function setup(): Promise<void> {
  ranBefore = emulatorUrlFromEnv() !== undefined || (await isRunning(localEmulator()));
}

export async function teardown(): Promise<void> {
  if (!ranBefore) await stopEmulator();
}
