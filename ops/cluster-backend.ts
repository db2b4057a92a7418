/**
 * The backend straight against the cluster: a LockService on the lock index, reached the way the
 * project's other commands reach it (ES_URL with ES_API_KEY, OPENSEARCH_URL, else the project's own
 * node on 127.0.0.1). It starts no node: an operator's command that finds nothing says so.
 */
import { hostname, userInfo } from 'node:os';
import { createWakeNotifier } from '../functions/runtime/wake/index.js';
import { createLockService, type SearchProduct } from '../functions/store/index.js';
import { givenStore, type StoreEndpoint, storeAt, storeDistribution } from '../infra/lib/store-target.js';
import { lockDocId } from '../packages/engine/src/keys.js';
import type { LockState } from '../packages/engine/src/model.js';
import { presentState } from '../packages/engine/src/present.js';
import { parseRequest } from '../packages/engine/src/requests.js';
import type { SharedSettings } from '../packages/engine/src/settings.js';
import type { LockView, OpsBackend } from './backend.js';

/** The server of `product` that the environment names, else the project's own node of it (not started here). */
export function clusterEndpoint(product: SearchProduct): StoreEndpoint {
  const given = givenStore(product);
  if (given) return given;
  const { portEnv, port } = storeDistribution(product).single;
  return storeAt(product, `http://127.0.0.1:${process.env[portEnv] ?? port}`);
}

/**
 * Who runs this when --by does not say: user@host. Straight against the cluster nothing identifies the
 * caller (a stage records the caller's IAM principal itself).
 */
function operatorName(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `operator@${hostname()}`;
  }
}

/** `shared`: the shared settings this process was given (the rest it takes from the lock index). */
export function clusterBackend(endpoint: StoreEndpoint, index: string, shared: SharedSettings = {}): OpsBackend {
  // Waiters with a wake channel are told of a drain, and woken by a revoke's hand-over, with the caller's AWS credentials.
  const {
    service: engine,
    store,
    client,
  } = createLockService({
    connection: endpoint.connection({ requestTimeoutMs: 15_000 }),
    index,
    settings: { ...shared, notifier: createWakeNotifier() },
  });

  /** The states with each lock's queue length, read from the lock documents themselves (the API does not show queues). */
  const withWaiters = async (states: LockState[]): Promise<LockView[]> => {
    const docIds = states.map((state) => lockDocId(state.namespace, state.granularity, state.key));
    const documents = docIds.length > 0 ? await store.read(docIds) : new Map();
    return states.map((state, i) => ({ ...presentState(state), waiters: documents.get(docIds[i]!)?.body.queue?.length ?? 0 }));
  };

  return {
    list: async (query) => withWaiters(await engine.list(query)),
    // The flat fields through the service's own request boundary: a bad granularity or path is its ValidationError.
    inspect: async (query) => withWaiters(await engine.engine.inspect(parseRequest(engine.requests.inspect, { mode: 'exclusive', ...query }))),
    revoke: (input) => engine.revoke({ ...input, by: input.by ?? operatorName() }),
    drain: (input) => engine.drain({ ...input, by: input.by ?? operatorName() }),
    status: () => engine.status(),
    sweep: (options) => engine.sweep(options),
    close: () => client.close(),
  };
}
