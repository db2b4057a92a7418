/**
 * A directory lock's search below (docs/tree-locks.md, step 4) shows the index as the directory's own
 * write left it, or later, but need not show what was written after it. A holder below may be renewed
 * after that write (a renewal touches only its own document, it does not look above), and a search
 * answered by a copy that has the directory's write but not the renewal shows the holder's old
 * expiry. Once the clock has passed that expiry, the search makes the holder look run out while its
 * renewed lease still lives: only the primary tells.
 *
 * Why a stand-in: a real node cannot be made to answer a search from a copy exactly one write behind,
 * on demand, at a chosen instant. The in-memory store (packages/engine/src/memory-store.ts) passes the same
 * store contract as the real one (test/store/contract.ts) and keeps a lagging copy, a state the
 * primary really had; the clock is the test's own, so the renewal and the passing of the old expiry
 * fall exactly between the directory's write and its search. Nothing else is simulated.
 */

import { describe, expect, it } from 'vitest';
import { LockHeldError } from '../../packages/engine/src/errors.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import { MemoryLockStore } from '../../packages/engine/src/memory-store.js';
import { LockService } from '../../packages/engine/src/service.js';
import { interpose } from '../../tools/shared/interposed-store.js';

const SKEW = 50;

describe('a directory lock searching below', () => {
  it('is not granted while a holder below lives on a renewal its search (one write behind) did not show', async () => {
    const namespace = 'search-below-renewed';
    let clock = 1_000;
    const settings = {
      now: () => clock,
      sleep: async (ms: number) => {
        clock += ms;
      },
      maxClockSkewMs: SKEW,
      ttl: { minMs: 1, defaultMs: 400, maxMs: 60_000 },
    };
    const memory = new MemoryLockStore();
    const direct = new LockService(memory, settings);

    // A reader below /r, with a short lease: its lock marks /r `lockedBelow`, so a lock on /r searches below.
    const reader = await direct.acquire({ namespace, granularity: 'tree', path: '/r/y', mode: 'shared', owner: 'reader', ttlMs: 400 });
    const oldExpiry = reader.expiresAt;
    expect((await memory.readPrimary([lockDocId(namespace, 'tree', '/r')])).get(lockDocId(namespace, 'tree', '/r'))?.body.lockedBelow).toBe(true);

    clock += 300;
    let renewedExpiry: number | undefined;
    const directory = new LockService(
      interpose(memory, {
        findLiveBelow: async (query, next, call) => {
          if (call !== 1) return next(query);
          // After /r's write, before its search is answered: the copy falls behind by exactly the next
          // write, which is the reader's renewal (while its lease lives); then the clock passes the old
          // expiry and the skew allowance, and the search is answered by that copy.
          memory.lagBehind();
          renewedExpiry = (await direct.renew({ leaseToken: reader.leaseToken, ttlMs: 400 })).expiresAt;
          expect(memory.copyLag).toBe(1);
          clock = oldExpiry + SKEW + 1;
          return memory.findLiveBelowOnCopy(query);
        },
      }),
      settings,
    );

    const attempt = directory.acquire({ namespace, granularity: 'tree', path: '/r', mode: 'exclusive', owner: 'renamer', ttlMs: 10_000 });
    await expect(attempt).rejects.toBeInstanceOf(LockHeldError);
    expect(renewedExpiry).toBeGreaterThan(clock + SKEW);
    await expect(attempt).rejects.toMatchObject({
      conflicts: [{ key: '/r/y', requestedMode: 'X', holders: [expect.objectContaining({ owner: 'reader', expiresAt: renewedExpiry })] }],
    });
    memory.catchUp();
  });
});
