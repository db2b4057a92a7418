/**
 * A tiny HTTP server that turns requests into API Gateway HTTP API events for the handlers (the
 * way API Gateway does): fast enough to test HTTP clients against the real handlers without
 * serverless-offline.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Handlers } from './functions.js';
import { httpEvent, lambdaContext } from './lambda-events.js';

const ROUTES: Record<string, keyof Handlers> = {
  'POST /acquire': 'acquire',
  'POST /renew': 'renew',
  'POST /release': 'release',
  'GET /inspect': 'inspect',
  'GET /locks': 'list',
  'GET /health': 'health',
};

export async function serveHandlers(handlers: Handlers): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      void (async () => {
        const url = new URL(request.url ?? '/', 'http://localhost');
        const method = (request.method ?? 'GET') as 'GET' | 'POST';
        const name = ROUTES[`${method} ${url.pathname}`];
        if (!name) {
          response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
          return;
        }
        const query: Record<string, string[]> = {};
        for (const [key, value] of url.searchParams) {
          query[key] ??= [];
          query[key].push(value);
        }
        const body = Buffer.concat(chunks).toString('utf8');
        const event = httpEvent(method, url.pathname, { ...(body ? { rawBody: body } : {}), query });
        const result = (await handlers[name](event, lambdaContext(name))) as APIGatewayProxyStructuredResultV2;
        response.writeHead(result.statusCode ?? 200, result.headers as Record<string, string>).end(result.body ?? '');
      })().catch((error: unknown) => {
        response.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ message: String(error) }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
