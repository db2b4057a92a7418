/** The store contract against the Elasticsearch store (real node) and the in-memory store. */

import { afterAll, beforeAll } from 'vitest';
import { deleteLockIndex, ElasticsearchLockStore, ensureLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { MemoryLockStore } from '../../packages/engine/src/memory-store.js';
import { closeTestClient, freshLockIndex, testClient } from '../support/engine.js';
import { storeContract } from './contract.js';

let client: SearchClient;
beforeAll(() => {
  client = testClient();
});
afterAll(async () => closeTestClient(client));

storeContract('Elasticsearch', async () => {
  const index = await freshLockIndex(client, 'contract');
  return {
    store: new ElasticsearchLockStore(client, index),
    refresh: async () => void (await client.indices.refresh({ index })),
    drop: () => deleteLockIndex(client, index),
    recreate: async () => void (await ensureLockIndex(client, index)),
  };
});

// Every document of the contract is in one namespace or another: with routing by namespace, a lock
// index with several shards keeps the same contract (a namespace's writes share its shard's sequence).
storeContract('Elasticsearch, 3 shards', async () => {
  const index = await freshLockIndex(client, 'contract-shards', { shards: 3 });
  return {
    store: new ElasticsearchLockStore(client, index),
    refresh: async () => void (await client.indices.refresh({ index })),
    drop: () => deleteLockIndex(client, index),
    recreate: async () => void (await ensureLockIndex(client, index, { shards: 3 })),
  };
});

storeContract('in-memory', async () => {
  const store = new MemoryLockStore();
  return { store, refresh: async () => {}, drop: async () => store.drop(), recreate: async () => store.recreate() };
});
