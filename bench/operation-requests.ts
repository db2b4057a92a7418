/**
 * Requests per operation besides the lock cycle, exact, from the client's own request events: a
 * renewal (uncontended, and with a waiter queued on the lock), a contended acquire (a shared lock
 * joined: its create finds the document) and a channel waiter's claim. The measured caller has a
 * client of its own, so that the other callers' requests (a waiter's polls) are not counted.
 */
import { createLockService, deleteLockIndex, ensureLockIndex } from '../functions/store/index.js';
import type { SearchClient } from '../functions/store/search-client.js';
import { lockDocId } from '../packages/engine/src/keys.js';
import type { WakeNotifier } from '../packages/engine/src/wake.js';
import { RequestCounter } from './lib/request-counter.js';

export interface OperationRequests {
  operation: string;
  /** Mean requests per operation over `samples`. */
  requests: number;
  samples: number;
  /** Of them, looks at the alias (`/_alias/`): the incarnation check before a pinned write. */
  aliasLooks: number;
  /** The goal, when the issue sets one (at most this many). */
  goal?: number;
}

const RENEWALS = 5;
// What is counted is the claim's own requests: a channel that takes every message is enough.
const notifier: WakeNotifier = { notify: async () => 'delivered' };

/** Counts, on fresh lock indices of their own; `clientOf` makes a client (one per measured caller). */
export async function operationRequests(clientOf: () => SearchClient, run: string, signingKey: Uint8Array): Promise<OperationRequests[]> {
  const others = clientOf();
  const measured = clientOf();
  const paths: string[] = [];
  measured.diagnostic.on('request', (_: unknown, event: { meta?: { request?: { params?: { path?: unknown } } } } | null) => {
    const path = event?.meta?.request?.params?.path;
    if (typeof path === 'string') paths.push(path);
  });
  const counter = new RequestCounter(measured);
  const index = `bench-operations-${run}`;
  await ensureLockIndex(others, index);
  const settings = { tokenSigningKey: signingKey, notifier };
  const mine = createLockService({ client: measured, index, settings }).service;
  const theirs = createLockService({ client: others, index, settings }).service;
  // Read once per engine before its first call: not an operation's.
  await mine.inspect({ namespace: 'ops', granularity: 'document', ids: ['warm'] });
  const results: OperationRequests[] = [];
  const count = async (operation: string, samples: number, work: () => Promise<void>, goal?: number) => {
    paths.length = 0;
    const requests = await counter.during(work);
    results.push({
      operation,
      requests: requests / samples,
      samples,
      aliasLooks: paths.filter((path) => path.includes('/_alias/')).length / samples,
      ...(goal !== undefined ? { goal } : {}),
    });
  };
  try {
    const plain = { namespace: 'ops', granularity: 'document' as const };
    let lease = (await mine.acquire({ ...plain, ids: ['renewed'], owner: 'holder', ttlMs: 60_000 })).leaseToken;
    await count(
      'renewal, uncontended',
      RENEWALS,
      async () => {
        for (let i = 0; i < RENEWALS; i++) lease = (await mine.renew({ leaseToken: lease, ttlMs: 60_000 })).leaseToken;
      },
      1,
    );
    await mine.release({ leaseToken: lease });

    lease = (await mine.acquire({ ...plain, ids: ['waited'], owner: 'holder', ttlMs: 60_000 })).leaseToken;
    const waiter = theirs.acquire({ ...plain, ids: ['waited'], owner: 'waiter', ttlMs: 60_000, waitMs: 30_000 });
    // The waiter's ticket is on the document before the renewals are counted.
    for (let tries = 0; tries < 200 && !(await queued(others, index, 'waited')); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    await count(
      'renewal, a waiter queued',
      RENEWALS,
      async () => {
        for (let i = 0; i < RENEWALS; i++) lease = (await mine.renew({ leaseToken: lease, ttlMs: 60_000 })).leaseToken;
      },
      2,
    );
    await mine.release({ leaseToken: lease });
    await theirs.release({ leaseToken: (await waiter).leaseToken });

    const reader = await theirs.acquire({ ...plain, ids: ['shared'], owner: 'reader', mode: 'shared', ttlMs: 60_000 });
    let joined = '';
    await count('contended acquire (a shared lock joined)', 1, async () => {
      joined = (await mine.acquire({ ...plain, ids: ['shared'], owner: 'joiner', mode: 'shared', ttlMs: 60_000 })).leaseToken;
    });
    await mine.release({ leaseToken: joined });
    await theirs.release({ leaseToken: reader.leaseToken });

    const holder = await theirs.acquire({ ...plain, ids: ['claimed'], owner: 'holder', ttlMs: 60_000 });
    const request = { ...plain, ids: ['claimed'], owner: 'pipeline', ttlMs: 60_000, requestId: `claim-${run}` };
    await mine.acquireOrQueue({ ...request, wake: { queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/bench' }, queueTtlMs: 60_000 });
    // The release reserves the lock for the channel waiter, which claims it: the same acquire, without the channel.
    await theirs.release({ leaseToken: holder.leaseToken });
    let claimed = '';
    await count('claim of a reservation (channel waiter)', 1, async () => {
      claimed = (await mine.acquire(request)).leaseToken;
    });
    await mine.release({ leaseToken: claimed });
  } finally {
    await deleteLockIndex(others, index);
    await measured.close();
    await others.close();
  }
  return results;
}

/** Whether a ticket waits on the document of `id` (realtime). */
async function queued(client: SearchClient, index: string, id: string): Promise<boolean> {
  const found = await client.get<{ queue?: unknown[] }>({ index, id: lockDocId('ops', 'document', id), routing: 'ops' }, { ignore: [404] });
  return (found._source?.queue?.length ?? 0) > 0;
}

export function printOperationRequests(results: readonly OperationRequests[]): void {
  console.log('Requests per operation (exact, from the client request events; alias looks among them):');
  for (const result of results) {
    const verdict = result.goal === undefined ? '' : result.requests <= result.goal ? `  (goal <= ${result.goal}: met)` : `  (goal <= ${result.goal}: missed)`;
    console.log(`${result.operation.padEnd(44)} ${result.requests.toFixed(2)} requests, ${result.aliasLooks.toFixed(2)} alias looks${verdict}`);
  }
  const looks = results.reduce((sum, result) => sum + result.aliasLooks, 0);
  console.log(
    `${'incarnation check on conditional writes'.padEnd(44)} ${looks === 0 ? 'no request added (goal: none: met)' : `${looks.toFixed(2)} alias looks (goal: none: missed)`}`,
  );
}
