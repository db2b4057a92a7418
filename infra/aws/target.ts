/** Where tests and tools find the AWS emulator: AWS_EMULATOR_URL when set, else the project's own (started when not running). */
import { emulatorUrlFromEnv } from './emulator.js';
import { startEmulator, stopEmulator } from './local.js';

export interface AwsEmulatorTarget {
  url: string;
  /** True when this call started the project's emulator (and `stop` stops it). */
  startedLocally: boolean;
  stop(): Promise<void>;
}

export async function resolveAwsEmulator(log?: (line: string) => void): Promise<AwsEmulatorTarget> {
  const given = emulatorUrlFromEnv();
  if (given) return { url: given, startedLocally: false, stop: async () => {} };
  const { emulator, started } = await startEmulator(log ? { log } : {});
  return {
    url: emulator.url,
    startedLocally: started,
    stop: async () => {
      if (started) await stopEmulator({ port: emulator.port });
    },
  };
}
