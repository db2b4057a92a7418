/**
 * An HTTP proxy in front of the local stack that keeps every request (method, path, headers, body)
 * and can lose what passes through it the way a network does: the answer after the server applied
 * the request (the caller sees the connection close), or the request itself. The servers behind it
 * are the real ones; only the wire between is played with.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  /** Path and query, as sent. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What happens to a request: passed on and answered, passed on but its answer lost, or lost before the server. */
export type Fate = 'pass' | 'lose-answer' | 'lose-request';

export interface RecordingProxy {
  url: string;
  readonly requests: Recorded[];
  /** Decides each request's fate (default: every one passes). */
  fate: (request: Recorded, index: number) => Fate;
  /** The requests to a path (`/acquire`), in order. */
  to(path: string): Recorded[];
  close(): Promise<void>;
}

export async function recordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const requests: Recorded[] = [];
  let server: Server;
  const proxy: RecordingProxy = {
    url: '',
    requests,
    fate: () => 'pass',
    to: (path) => requests.filter((request) => request.path.split('?')[0] === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  server = createServer((incoming, answer) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const recorded: Recorded = {
        method: incoming.method ?? 'GET',
        path: incoming.url ?? '/',
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const fate = proxy.fate(recorded, requests.length);
      requests.push(recorded);
      if (fate === 'lose-request') {
        incoming.socket.destroy();
        return;
      }
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: recorded.method, path: recorded.path, headers: { ...incoming.headers, host: upstream.host } },
        (reply) => {
          if (fate === 'lose-answer') {
            // The server has answered, so it applied the request: read it all, then cut the caller off.
            reply.resume();
            reply.on('end', () => incoming.socket.destroy());
            return;
          }
          answer.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(answer);
        },
      );
      forward.on('error', () => incoming.socket.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
