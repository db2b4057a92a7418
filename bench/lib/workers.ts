/** What the benchmarks share: concurrent workers running a cycle for a while, and the raw rows' lock document. */
import { randomBytes } from 'node:crypto';

export type Cycle = (worker: number, iteration: number) => Promise<void>;

/** Undoes what a lock took (a release, a delete). */
export type Release = () => Promise<void>;

/** A cycle in two parts: its acquire, which latency is measured on, resolving to its release. */
export type Lock = (worker: number, iteration: number) => Promise<Release>;

/** The whole cycle of a lock: acquire, then release. */
export const cycleOf =
  (lock: Lock): Cycle =>
  async (worker, iteration) => {
    const release = await lock(worker, iteration);
    await release();
  };

/** Cycles completed by `concurrency` workers running `cycle` back to back for `seconds`. */
export async function measure(cycle: Cycle, seconds: number, concurrency: number): Promise<number> {
  let completed = 0;
  const end = Date.now() + seconds * 1_000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      for (let iteration = 0; Date.now() < end; iteration++) {
        await cycle(worker, iteration);
        completed++;
      }
    }),
  );
  return completed;
}

/** The document the engine stores for one exclusive holder, so that the raw rows index the same data. */
export function rawLockDocument(id: string, worker: number) {
  const now = Date.now();
  return {
    namespace: 'bench',
    granularity: 'document',
    key: id,
    lockId: id,
    holders: [
      {
        lease: randomBytes(16).toString('base64url'),
        proof: randomBytes(32).toString('base64url'),
        owner: `w${worker}`,
        mode: 'X',
        expiresAt: now + 30_000,
        grantedAt: now,
        fence: null,
        request: null,
        call: null,
      },
    ],
    minExpiresAt: now + 30_000,
    maxExpiresAt: now + 30_000,
    updatedAt: now,
  };
}
