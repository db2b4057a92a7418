/** A TCP port free on 127.0.0.1 now, as the system picks one (port 0); a server started soon after takes it. */
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
