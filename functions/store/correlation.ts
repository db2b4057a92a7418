/**
 * The correlation id of the call being served, sent to Elasticsearch as `X-Opaque-Id` with every
 * request the store makes for it: it then shows in Elasticsearch's slow logs, tasks and deprecation
 * logs next to the function's own log lines. Carried by async context, so the core never sees it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const current = new AsyncLocalStorage<string>();

export const withOpaqueId = <T>(opaqueId: string, work: () => Promise<T>): Promise<T> => current.run(opaqueId, work);

/** Request options naming the current call, if any. */
export function opaqueIdOption(): { opaqueId?: string } {
  const opaqueId = current.getStore();
  return opaqueId ? { opaqueId } : {};
}
