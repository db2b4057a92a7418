/**
 * An in-memory stand-in for the lock service's HTTP API (health, acquire, renew, release), for
 * testing the load-test kit without Elasticsearch. `unsafe` makes it grant every request, so the
 * safety checker has something to catch.
 *
 *   npx tsx test/loadtest/fake-lock-service.ts [port] [--unsafe]
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

interface Hold {
  namespace: string;
  granularity: 'global' | 'document' | 'tree';
  keys: string[];
  mode: 'exclusive' | 'shared';
  expiresAt: number;
  fence: number;
}

export interface FakeOptions {
  unsafe?: boolean;
  /** Added to every acquire, in ms. */
  delayMs?: number;
}

const within = (a: string, b: string): boolean => a === b || b.startsWith(`${a}/`);

function conflicts(a: Hold, b: Omit<Hold, 'expiresAt' | 'fence'>): boolean {
  if (a.namespace !== b.namespace || a.granularity !== b.granularity) return false;
  if (a.mode === 'shared' && b.mode === 'shared') return false;
  if (a.granularity === 'global') return true;
  if (a.granularity === 'document') return a.keys.some((key) => b.keys.includes(key));
  return a.keys.some((p) => b.keys.some((q) => within(p, q) || within(q, p)));
}

export class FakeLockService {
  private readonly holds = new Map<string, Hold>();
  private fence = 1000;
  private server: Server | undefined;
  stats = { acquired: 0, conflicts: 0, released: 0 };

  constructor(private readonly options: FakeOptions = {}) {}

  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => this.send(res, 500, { error: 'Internal', message: String(error) }));
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  private async body(req: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const now = Date.now();
    if (req.method === 'GET' && req.url === '/health') return this.send(res, 200, { status: 'ok' });
    if (req.method !== 'POST') return this.send(res, 404, { error: 'NotFound' });
    const body = await this.body(req);
    if (req.url === '/acquire') {
      if (this.options.delayMs) await new Promise((r) => setTimeout(r, this.options.delayMs));
      const granularity = body.granularity as Hold['granularity'];
      const keys = granularity === 'global' ? ['*'] : granularity === 'document' ? (body.ids as string[]) : [body.path as string];
      if (typeof body.namespace !== 'string' || typeof body.owner !== 'string' || !Array.isArray(keys) || keys.some((k) => typeof k !== 'string')) {
        return this.send(res, 400, { error: 'ValidationError', message: 'bad request', fields: [] });
      }
      const wanted = { namespace: body.namespace, granularity, keys, mode: (body.mode as Hold['mode']) ?? 'exclusive' };
      const ttlMs = typeof body.ttlMs === 'number' ? body.ttlMs : 30_000;
      const blocking = [...this.holds.values()].filter((hold) => hold.expiresAt > now && conflicts(hold, wanted));
      if (blocking.length > 0 && !this.options.unsafe) {
        this.stats.conflicts++;
        const retryAfterMs = Math.max(25, Math.min(1000, Math.max(...blocking.map((h) => h.expiresAt)) - now));
        return this.send(
          res,
          409,
          { error: 'LockHeldError', message: 'held', retryAfterMs, conflicts: blocking.map((h) => ({ keys: h.keys, mode: h.mode })) },
          { 'Retry-After': String(Math.ceil(retryAfterMs / 1000)) },
        );
      }
      const leaseToken = randomUUID();
      const hold: Hold = { ...wanted, expiresAt: now + ttlMs, fence: ++this.fence };
      this.holds.set(leaseToken, hold);
      this.stats.acquired++;
      return this.send(res, 200, {
        leaseToken,
        fencingToken: String(hold.fence),
        expiresAt: new Date(hold.expiresAt).toISOString(),
        ttlMs,
        namespace: hold.namespace,
        granularity,
        mode: hold.mode,
        owner: body.owner,
      });
    }
    if (req.url === '/renew') {
      const hold = this.holds.get(String(body.leaseToken));
      if (!hold || hold.expiresAt <= now) return this.send(res, 410, { error: 'LeaseLostError' });
      hold.expiresAt = now + (typeof body.ttlMs === 'number' ? body.ttlMs : 30_000);
      return this.send(res, 200, { leaseToken: body.leaseToken, fencingToken: String(hold.fence), expiresAt: new Date(hold.expiresAt).toISOString() });
    }
    if (req.url === '/release') {
      const token = String(body.leaseToken);
      const hold = this.holds.get(token);
      this.holds.delete(token);
      this.stats.released++;
      return this.send(res, 200, { outcome: !hold ? 'not_held' : hold.expiresAt <= now ? 'expired' : 'released' });
    }
    return this.send(res, 404, { error: 'NotFound' });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const port = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 3999);
  const service = new FakeLockService({ unsafe: process.argv.includes('--unsafe') });
  void service.start(port).then((url) => console.log(`fake lock service on ${url}`));
}
