/** What answers at an emulator's address: moto (its /moto-api/config), something else, or nothing. */
import { existsSync, readFileSync } from 'node:fs';
import { httpGet } from '../lib/http-probe.js';
import { pidAlive } from '../lib/stop-process.js';
import type { LocalEmulator } from './emulator.js';

/** True when moto answers at `url`, else why not ("nothing: connection refused (ECONNREFUSED)", "404: ..."). */
export async function motoAnswers(url: string, timeoutMs = 2000): Promise<true | string> {
  const answer = await httpGet(`${url}/moto-api/config`, timeoutMs);
  if ('error' in answer) return `nothing: ${answer.error}`;
  try {
    // moto answers its Lambda and Batch settings (201).
    if (answer.status < 300 && 'lambda' in (JSON.parse(answer.body) as object)) return true;
  } catch {
    // not JSON: not moto
  }
  return `${answer.status}: ${answer.body.slice(0, 200)}`;
}

/** The pid of the emulator this project started on the port, when its pid file names a live process. */
export function emulatorPid(emulator: LocalEmulator): number | undefined {
  if (!existsSync(emulator.pidFile)) return undefined;
  const pid = Number(readFileSync(emulator.pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && pidAlive(pid) ? pid : undefined;
}

/** This project's emulator runs on the port: its pid file names a live process, and moto answers there. */
export async function isRunning(emulator: LocalEmulator): Promise<boolean> {
  return emulatorPid(emulator) !== undefined && (await motoAnswers(emulator.url)) === true;
}
