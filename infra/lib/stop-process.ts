/**
 * Stopping a process politely, then firmly: the stack's serverless-offline, the local Elasticsearch
 * and a k6 run past its time all go through here.
 */
import { waitUntil } from './wait.js';

export interface Stoppable {
  signal(signal: NodeJS.Signals): void;
  isGone(): boolean;
}

export interface StopOptions {
  /** The polite signal (SIGTERM by default; k6 writes its summary on SIGINT). */
  first?: NodeJS.Signals;
  /** How long the polite signal has before SIGKILL. */
  graceMs: number;
  /** How long to wait after SIGKILL (0: do not wait). */
  killWaitMs?: number;
}

/** Resolves whether the process went away on the polite signal. */
export async function stopProcess(target: Stoppable, options: StopOptions): Promise<boolean> {
  if (target.isGone()) return true;
  const gone = async (timeoutMs: number): Promise<boolean> => (await waitUntil(() => target.isGone() || 'still running', { timeoutMs, intervalMs: 100 })).ready;
  target.signal(options.first ?? 'SIGTERM');
  if (await gone(options.graceMs)) return true;
  target.signal('SIGKILL');
  if (options.killWaitMs) await gone(options.killWaitMs);
  return false;
}

/** A process by pid (a daemon we did not spawn, such as Elasticsearch started with -d). */
export function pidProcess(pid: number): Stoppable {
  return {
    signal: (signal) => {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    },
    isGone: () => !pidAlive(pid),
  };
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
