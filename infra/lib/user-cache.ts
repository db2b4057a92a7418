/**
 * Where the project keeps what is slow to fetch or build (Elasticsearch, k6): outside the clone, so
 * fresh CI clones on the same machine reuse it. Root's home is not readable by the service user
 * Elasticsearch must run as, so root caches in /var/cache; everyone else in their XDG cache.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

export function userCacheDir(): string {
  if (process.getuid?.() === 0) return '/var/cache/es-lease-locks';
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'es-lease-locks');
}
