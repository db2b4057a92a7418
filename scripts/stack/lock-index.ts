/**
 * Creates the lock index before the functions start: they no longer create a missing one themselves.
 * A new one records the shared settings the functions' environment gives (MAX_CLOCK_SKEW_MS).
 */
import { sharedSettingsFromEnv } from '../../functions/runtime/config.js';
import { ensureLockIndex } from '../../functions/store/index.js';
import type { StoreEndpoint } from '../../infra/lib/store-target.js';

export async function prepareLockIndex(
  store: StoreEndpoint,
  index: string,
  options: { replaceIdleLegacyIndex: boolean; env: Record<string, string | undefined> },
): Promise<void> {
  const shared = sharedSettingsFromEnv(options.env);
  if ('problems' in shared) throw new Error(shared.problems.join('; '));
  const client = store.client({ requestTimeoutMs: 30_000 });
  try {
    await ensureLockIndex(client, index, { replaceIdleLegacyIndex: options.replaceIdleLegacyIndex, sharedSettings: shared });
  } finally {
    await client.close();
  }
}
