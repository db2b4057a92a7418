import type { SearchClient } from '../../functions/store/search-client.js';

/** The paths of the requests `client` sends while `work` runs (the client's own request events). */
export async function requestsOf(client: SearchClient, work: () => Promise<unknown>): Promise<string[]> {
  const paths: string[] = [];
  const listener = (_: unknown, event: { meta?: { request?: { params?: { path?: unknown } } } } | null) => {
    const path = event?.meta?.request?.params?.path;
    if (typeof path === 'string') paths.push(path);
  };
  client.diagnostic.on('request', listener);
  try {
    await work();
  } finally {
    client.diagnostic.off('request', listener);
  }
  return paths;
}

/** The paths of the requests the functions' own client (the container's runtime) sends while `work` runs. */
export async function requestsDuring(work: () => Promise<void>): Promise<string[]> {
  const { runtime } = await import('../../functions/runtime/runtime.js');
  return requestsOf(await runtime().client(), work);
}
