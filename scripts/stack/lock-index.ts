/** Creates the lock index before the functions start: they no longer create a missing one themselves. */
import { createElasticsearchClient, ensureLockIndex } from '../../functions/store/index.js';

export async function prepareLockIndex(env: Record<string, string>, options: { replaceIdleLegacyIndex: boolean }): Promise<void> {
  const client = createElasticsearchClient({ url: env.ES_URL!, ...(env.ES_API_KEY ? { apiKey: env.ES_API_KEY } : {}), requestTimeoutMs: 30_000 });
  try {
    await ensureLockIndex(client, env.LOCK_INDEX!, options);
  } finally {
    await client.close();
  }
}
