/** The paths of the requests the functions' own client (the container's runtime) sends while `work` runs. */
export async function requestsDuring(work: () => Promise<void>): Promise<string[]> {
  const { runtime } = await import('../../functions/runtime/runtime.js');
  const client = await runtime().client();
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
