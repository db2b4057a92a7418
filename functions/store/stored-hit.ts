import type { estypes } from '@elastic/elasticsearch';
import type { LockDocument } from '../../packages/engine/src/model.js';
import type { StoredLock } from '../../packages/engine/src/store.js';
import { epochOfIncarnation } from './incarnation.js';

/** A search hit (asked with `seq_no_primary_term`) as the lock it shows. */
export function storedFromHit(hit: estypes.SearchHit<LockDocument>): StoredLock {
  return {
    docId: hit._id!,
    seqNo: hit._seq_no!,
    primaryTerm: hit._primary_term!,
    index: hit._index,
    epoch: epochOfIncarnation(hit._index),
    body: hit._source!,
  };
}
