/** Creates the lock index before the functions start: they no longer create a missing one themselves. */
import { ensureLockIndex } from '../../functions/store/index.js';
import type { StoreEndpoint } from '../../infra/lib/store-target.js';

export async function prepareLockIndex(store: StoreEndpoint, index: string, options: { replaceIdleLegacyIndex: boolean }): Promise<void> {
  const client = store.client({ requestTimeoutMs: 30_000 });
  try {
    await ensureLockIndex(client, index, options);
  } finally {
    await client.close();
  }
}
