/**
 * What the commands that drive the engine in this process (loadtest:engine, loadtest:waiting) run
 * on: the lock store of --store, reached or started as the kit does it and checked, an engine target
 * on it, and the server's name for the report. `close` drops the target and stops a store this
 * process started; Ctrl-C drops the target too before exiting 130.
 */
import type { SearchProduct } from '../../../functions/store/search-client.js';
import { describeServer, serverLabel } from '../../../infra/lib/server-info.js';
import { resolveStore, type StoreTarget, storeLogTag } from '../../../infra/lib/store-target.js';
import { type EngineTarget, openEngineTarget } from './target.js';

export interface EngineSession {
  store: StoreTarget;
  target: EngineTarget;
  /** "OpenSearch 3.8.0" (serverLabel), as the reports name it. */
  server: string;
  close(): Promise<void>;
}

export async function openEngineSession(product: SearchProduct): Promise<EngineSession> {
  const store = await resolveStore(product, (line) => console.log(`[${storeLogTag(product)}] ${line}`));
  await store.check();
  const target = await openEngineTarget({ connection: store.connection() });
  const server = serverLabel(await describeServer(target.client));
  const interrupted = (): void => {
    void target.close().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  return {
    store,
    target,
    server,
    async close() {
      process.off('SIGINT', interrupted);
      await target.close();
      await store.stop();
    },
  };
}
