/** Wiring: an engine over a lock index on Elasticsearch or OpenSearch. */
import { LockService } from '../../packages/engine/src/service.js';
import type { SettingsOverrides } from '../../packages/engine/src/settings.js';
import { ElasticsearchLockStore } from './elasticsearch-store.js';
import { createSearchClient, type SearchClient, type SearchConnection } from './search-client.js';

export {
  type AdoptedIncarnation,
  adoptLockIndex,
  LiveTicketsError,
  liveTickets,
  type RecreatedLockIndex,
  recreateLockIndex,
} from './change-incarnation.js';
export { createElasticsearchClient, type ElasticsearchConnection } from './client.js';
export { withOpaqueId } from './correlation.js';
export { ElasticsearchLockStore } from './elasticsearch-store.js';
export {
  deleteFenced,
  excludeFencedTombstones,
  FENCED_TOMBSTONE_FIELD,
  type FencedTombstone,
  type FencedWrite,
  isFencedTombstone,
  writeFenced,
} from './fenced-document.js';
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
export {
  deleteLockIndex,
  type EnsureLockIndexOptions,
  ensureLockIndex,
  lockIndexDefinition,
  lockIndexIncarnation,
  lockIndexShards,
  MAX_LOCK_INDEX_SHARDS,
} from './lock-index.js';
export { adapt as adaptOpenSearchClient } from './opensearch-client.js';
export { namespaceRouting, routingOf } from './routing.js';
export { createSearchClient, productOf, SEARCH_PRODUCTS, type SearchClient, type SearchConnection, type SearchProduct } from './search-client.js';
export { readSharedSettings, recordSharedSettings, SHARED_SETTINGS_META } from './shared-settings.js';

export function createLockService(options: { client?: SearchClient; connection?: SearchConnection; index: string; settings?: SettingsOverrides }): {
  service: LockService;
  client: SearchClient;
  store: ElasticsearchLockStore;
} {
  const client = options.client ?? createSearchClient(options.connection ?? { url: 'http://127.0.0.1:9200' });
  const store = new ElasticsearchLockStore(client, options.index);
  return { service: new LockService(store, options.settings), client, store };
}
