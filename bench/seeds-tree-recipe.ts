/**
 * The baseline: tree locking as the seeds describe it, done straightforwardly with core APIs (no
 * scripts on this build): a shared counter on each ancestor, updated one at a time by read + conditional
 * write, then a create for the target; release walks back from the deepest ancestor.
 * Only for the benchmark: no leases, no tokens.
 */

import type { SearchClient } from '../functions/store/search-client.js';
import { ancestorsOf } from '../packages/engine/src/granularity/index.js';
import { lockDocId } from '../packages/engine/src/keys.js';

interface Counter {
  namespace: string;
  granularity: 'tree';
  key: string;
  lockId: string;
  holders: [];
  minExpiresAt: number;
  maxExpiresAt: number;
  /** Reused as the seeds' lock_count, which this mapping has no field for. */
  updatedAt: number;
}

export function seedsTreeRecipe(client: SearchClient, index: string) {
  const id = (path: string) => lockDocId('recipe', 'tree', path);
  const body = (path: string, count: number): Counter => ({
    namespace: 'recipe',
    granularity: 'tree',
    key: path,
    lockId: id(path),
    holders: [],
    minExpiresAt: 0,
    maxExpiresAt: 0,
    updatedAt: count,
  });

  async function adjust(path: string, delta: 1 | -1): Promise<void> {
    for (;;) {
      const current = await client.get<Counter>({ index, id: id(path) }, { ignore: [404] });
      try {
        if (!current.found) {
          await client.create({ index, id: id(path), document: body(path, 1) });
        } else if (current._source!.updatedAt + delta === 0) {
          await client.delete({ index, id: id(path), if_seq_no: current._seq_no!, if_primary_term: current._primary_term! });
        } else {
          await client.index({
            index,
            id: id(path),
            document: body(path, current._source!.updatedAt + delta),
            if_seq_no: current._seq_no!,
            if_primary_term: current._primary_term!,
          });
        }
        return;
      } catch (error) {
        if ((error as { meta?: { statusCode?: number } }).meta?.statusCode !== 409) throw error;
      }
    }
  }

  return {
    async acquire(path: string): Promise<() => Promise<void>> {
      const ancestors = ancestorsOf(path);
      for (const ancestor of ancestors) await adjust(ancestor, 1);
      await client.create({ index, id: id(path), document: body(path, 1) });
      return async () => {
        await client.delete({ index, id: id(path) });
        for (const ancestor of [...ancestors].reverse()) await adjust(ancestor, -1);
      };
    },
  };
}
