/** Wiring: an engine over an Elasticsearch lock index. */
import type { Client } from '@elastic/elasticsearch';
import { LockEngine } from '../core/engine.js';
import type { SettingsOverrides } from '../core/settings.js';
import { createElasticsearchClient, type ElasticsearchConnection } from './client.js';
import { ElasticsearchLockStore } from './elasticsearch-store.js';

export { createElasticsearchClient, type ElasticsearchConnection } from './client.js';
export { withOpaqueId } from './correlation.js';
export { ElasticsearchLockStore } from './elasticsearch-store.js';
export { deleteFenced, type FencedWrite, writeFenced } from './fenced-document.js';
export {
  claimEpoch,
  type EpochHistory,
  epochHistory,
  epochOfIncarnation,
  IncarnationEpochError,
  type IncarnationRecord,
  incarnationName,
  incarnationRecord,
  REGISTRY_INDEX,
} from './incarnation.js';
export { type AdoptedIncarnation, adoptLockIndex, deleteLockIndex, type EnsureLockIndexOptions, ensureLockIndex, lockIndexIncarnation } from './lock-index.js';

export function createLockEngine(options: { client?: Client; connection?: ElasticsearchConnection; index: string; settings?: SettingsOverrides }): {
  engine: LockEngine;
  client: Client;
  store: ElasticsearchLockStore;
} {
  const client = options.client ?? createElasticsearchClient(options.connection ?? { url: 'http://127.0.0.1:9200' });
  const store = new ElasticsearchLockStore(client, options.index);
  return { engine: new LockEngine(store, options.settings), client, store };
}
