import { spawnSync } from 'node:child_process';

/** The path `command` resolves to on PATH, or undefined. */
export function which(command: string): string | undefined {
  const result = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.trim() ? result.stdout.trim() : undefined;
}
