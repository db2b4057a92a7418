/**
 * A caller's own client, built from the package's CommonJS entry (a CommonJS Lambda, Jest, a
 * TypeScript build to CommonJS), raises error classes other than those of the ESM entry the store
 * imports. The store must read its errors all the same: each case runs on the real node with a
 * client from either entry.
 */
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createRequire } from 'node:module';
import { createServer, type Socket } from 'node:net';
import { type Client, errors } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createElasticsearchClient,
  createLockService,
  deleteFenced,
  type ElasticsearchConnection,
  ElasticsearchLockStore,
  writeFenced,
} from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import {
  LockContentionError,
  LockHeldError,
  LockOutcomeUnknownError,
  StaleFencingTokenError,
  StoreUnavailableError,
} from '../../packages/engine/src/errors.js';
import type { LockDocument } from '../../packages/engine/src/model.js';
import { LockService } from '../../packages/engine/src/service.js';
import { closeTestClient, freshLockIndex, TEST_SKEW_MS, testClient } from '../support/engine.js';

type ElasticsearchModule = typeof import('@elastic/elasticsearch');
const commonJs = createRequire(import.meta.url)('@elastic/elasticsearch') as ElasticsearchModule;

/** createElasticsearchClient's options, on the CommonJS entry's Client. */
function commonJsClient(connection: ElasticsearchConnection): Client {
  const nodes = typeof connection.url === 'string' ? [connection.url] : (connection.url ?? []);
  return new commonJs.Client({
    nodes,
    ...(connection.apiKey ? { auth: { apiKey: connection.apiKey } } : {}),
    requestTimeout: connection.requestTimeoutMs ?? 5_000,
    maxRetries: 0,
    compression: false,
  });
}

const entries: Array<{ entry: string; connect: (connection: ElasticsearchConnection) => Client }> = [
  { entry: 'ESM', connect: createElasticsearchClient },
  { entry: 'CommonJS', connect: commonJsClient },
];

const esNodes = (): string[] => inject('esUrl').split(',');
const apiKey = (): { apiKey?: string } => (inject('esApiKey') ? { apiKey: inject('esApiKey') } : {});
const settle = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => ({ granted: value }),
    (error: unknown) => error,
  );

/** A TCP server that accepts and never answers: every request to it times out. */
async function blackHole(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Passes every request on to the node except the single-document create, which it holds unanswered:
 * the engine's write times out while its reads (including the read-back of a lost answer) work.
 */
async function proxyHoldingCreates(target: string): Promise<{ url: string; close: () => Promise<void> }> {
  const upstream = new URL(target);
  const send = upstream.protocol === 'https:' ? httpsRequest : httpRequest;
  const server = createHttpServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      // A create, on its own or in a bulk (a lock's write travels with reads of what is above it): never answered.
      if (request.url?.includes('/_create/') || (request.url?.includes('/_bulk') && body.includes('{"create":'))) return;
      const forwarded = send(
        new URL(request.url ?? '/', upstream),
        { method: request.method, headers: { ...request.headers, host: upstream.host } },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      forwarded.on('error', () => response.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A port nothing listens on (it was just bound and released): connecting to it is refused. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

/**
 * Holds each single-document create until `parties` of them wait, so that every acquirer has read the
 * key free before any of them writes: the losers meet a version conflict for certain, not by chance.
 */
function raceCreates(client: Client, parties: number): () => void {
  const own = Object.hasOwn(client, 'create');
  const original = client.create;
  const waiting: Array<() => void> = [];
  const releaseAll = () => {
    for (const go of waiting.splice(0)) go();
  };
  const gated = async (...args: unknown[]) => {
    await new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length >= parties) releaseAll();
      // A create nobody joins (a retry of one acquirer) goes ahead alone.
      else setTimeout(releaseAll, 2_000).unref();
    });
    return (original as (...args: unknown[]) => Promise<unknown>).apply(client, args);
  };
  client.create = gated as unknown as Client['create'];
  return () => {
    if (own) client.create = original;
    else delete (client as Partial<Client>).create;
  };
}

const lockDocument = (key: string): LockDocument => ({ namespace: 'orders', granularity: 'document', key, holders: [] }) as unknown as LockDocument;

let admin: SearchClient;
beforeAll(() => {
  admin = testClient();
});
afterAll(async () => closeTestClient(admin));

describe.each(entries)('a client from the $entry entry', ({ entry, connect }) => {
  let client: Client;
  let index: string;
  beforeAll(async () => {
    client = connect({ url: esNodes(), ...apiKey(), requestTimeoutMs: 30_000 });
    index = await freshLockIndex(admin, `copies-${entry.toLowerCase()}`);
  });
  afterAll(async () => client.close());

  it.runIf(entry === 'CommonJS')('raises error classes of its own (the hazard this file guards against)', async () => {
    const missing = await client.get({ index, id: 'nothing-here' }).catch((error: unknown) => error);
    expect((missing as Error).name).toBe('ResponseError');
    expect(missing).not.toBeInstanceOf(errors.ResponseError);
  });

  it('two concurrent acquires of one id: one is granted, the other gets LockHeldError', async () => {
    const { service: engine } = createLockService({ client, index, settings: { maxClockSkewMs: 50 } });
    const restore = raceCreates(client, 2);
    try {
      for (let round = 0; round < 3; round++) {
        const attempts = await Promise.all(
          ['alice', 'bob'].map((owner) =>
            settle(engine.acquire({ namespace: 'orders', granularity: 'document', ids: [`pair-${round}`], owner, ttlMs: 10_000 })),
          ),
        );
        const granted = attempts.filter(
          (attempt): attempt is { granted: { leaseToken: string } } => typeof attempt === 'object' && attempt !== null && 'granted' in attempt,
        );
        expect(granted).toHaveLength(1);
        expect(attempts.filter((attempt) => !granted.includes(attempt as never))).toEqual([expect.any(LockHeldError)]);
        await engine.release({ leaseToken: granted[0]!.granted.leaseToken });
      }
    } finally {
      restore();
    }
  });

  it('several acquirers of overlapping key sets, waitMs 0: every refusal is LockHeldError or LockContentionError', async () => {
    const { service: engine } = createLockService({ client, index, settings: { maxClockSkewMs: 50 } });
    const pool = ['k0', 'k1', 'k2', 'k3', 'k4'];
    for (let round = 0; round < 5; round++) {
      const attempts = await Promise.all(
        Array.from({ length: 8 }, (_, worker) => {
          const ids = [0, 1, 2].map((step) => `${pool[(worker + step * 2) % pool.length]}-${round}`);
          return settle(engine.acquire({ namespace: 'orders', granularity: 'document', ids, owner: `w${worker}`, ttlMs: 10_000, waitMs: 0 }));
        }),
      );
      const refusals = attempts.filter((attempt) => attempt instanceof Error);
      for (const refusal of refusals)
        expect(
          [LockHeldError, LockContentionError].some((kind) => refusal instanceof kind),
          String(refusal),
        ).toBe(true);
      const granted = attempts.flatMap((attempt) =>
        attempt instanceof Error ? [] : [(attempt as { granted: { leaseToken: string; keys: Array<{ key: string }> } }).granted],
      );
      // Any two sets of 3 of 5 keys overlap: at most one acquirer can win a round (all may back off).
      expect(granted.length).toBeLessThanOrEqual(1);
      expect(refusals.length).toBe(attempts.length - granted.length);
      for (const grant of granted) await engine.release({ leaseToken: grant.leaseToken });
    }
  });

  it('a request that times out is retryable, and ambiguous when it carried a write', async () => {
    const hole = await blackHole();
    const silent = connect({ url: hole.url, requestTimeoutMs: 200 });
    try {
      const store = new ElasticsearchLockStore(silent, index);
      const write = await store.write([{ kind: 'create', docId: 'orders|d|silent', body: lockDocument('silent') }]).catch((error: unknown) => error);
      expect(write).toBeInstanceOf(StoreUnavailableError);
      expect((write as StoreUnavailableError).context.ambiguous).toBe(true);
      const read = await store.read(['orders|d|silent']).catch((error: unknown) => error);
      expect(read).toBeInstanceOf(StoreUnavailableError);
      expect((read as StoreUnavailableError).context.ambiguous).toBeFalsy();
      // The shared settings as the lock index records them, read before the node fell silent (with the
      // node silent from the start, the engine's first request would be that read, not the write).
      const settled = Object.assign(new ElasticsearchLockStore(silent, index), {
        sharedSettings: async () => ({ index, recorded: { maxClockSkewMs: TEST_SKEW_MS } }),
      });
      const engine = new LockService(settled);
      const outcome = await engine.acquire({ namespace: 'orders', granularity: 'document', ids: ['silent'], owner: 'w' }).catch((error: unknown) => error);
      // The engine writes first; with the answer lost and the read-back silent too, it cannot know what it holds.
      expect(outcome).toBeInstanceOf(LockOutcomeUnknownError);
      expect((outcome as LockOutcomeUnknownError).cause).toBeInstanceOf(StoreUnavailableError);
    } finally {
      await silent.close();
      await hole.close();
    }
  });

  it("an acquire whose write times out ends in StoreUnavailableError or LockOutcomeUnknownError, never the client's error", async () => {
    const proxy = await proxyHoldingCreates(esNodes()[0]!);
    const held = connect({ url: proxy.url, ...apiKey(), requestTimeoutMs: 300 });
    try {
      const { service: engine } = createLockService({ client: held, index, settings: { maxClockSkewMs: 50 } });
      const outcome = await engine
        .acquire({ namespace: 'orders', granularity: 'document', ids: [`held-${randomBytes(3).toString('hex')}`], owner: 'w' })
        .catch((error: unknown) => error);
      expect(
        [StoreUnavailableError, LockOutcomeUnknownError].some((kind) => outcome instanceof kind),
        String(outcome),
      ).toBe(true);
    } finally {
      await held.close();
      await proxy.close();
    }
  });

  it('a refused connection is StoreUnavailableError, and not ambiguous: the write was never sent', async () => {
    const refused = connect({ url: await closedPort(), requestTimeoutMs: 2_000 });
    try {
      const store = new ElasticsearchLockStore(refused, index);
      const write = await store.write([{ kind: 'create', docId: 'orders|d|refused', body: lockDocument('refused') }]).catch((error: unknown) => error);
      expect(write).toBeInstanceOf(StoreUnavailableError);
      expect((write as StoreUnavailableError).context.ambiguous).toBeFalsy();
      const { service: engine } = createLockService({ client: refused, index });
      const outcome = await engine.acquire({ namespace: 'orders', granularity: 'document', ids: ['refused'], owner: 'w' }).catch((error: unknown) => error);
      expect(outcome).toBeInstanceOf(StoreUnavailableError);
      expect((outcome as StoreUnavailableError).context.ambiguous).toBeFalsy();
    } finally {
      await refused.close();
    }
  });

  it('fenced writes and deletes with an older token raise StaleFencingTokenError', async () => {
    const data = `fenced-copies-${entry.toLowerCase()}-${randomBytes(4).toString('hex')}`;
    await admin.indices.create({ index: data });
    try {
      await writeFenced(client, { index: data, id: 'doc', document: { by: 'newer' }, fencingToken: '20' });
      await expect(writeFenced(client, { index: data, id: 'doc', document: { by: 'older' }, fencingToken: '10' })).rejects.toBeInstanceOf(
        StaleFencingTokenError,
      );
      await expect(deleteFenced(client, { index: data, id: 'doc', fencingToken: '10' })).rejects.toBeInstanceOf(StaleFencingTokenError);
      expect((await deleteFenced(client, { index: data, id: 'doc', fencingToken: '20' })).deleted).toBe(true);
    } finally {
      await admin.indices.delete({ index: data }, { ignore: [404] });
    }
  });
});
