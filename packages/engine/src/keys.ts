/** From a lock target to the lock documents it needs, in the one order every caller uses. */
import { lockDocId } from './doc-id.js';
import { rulesFor } from './granularity/index.js';
import type { LockTarget, PlannedKey, RequestedMode } from './model.js';

export { lockDocId } from './doc-id.js';

export function planKeys(target: LockTarget, mode: RequestedMode): PlannedKey[] {
  const { namespace, granularity } = target;
  const keys = rulesFor(granularity)
    .plan(target, mode)
    .map(({ key, mode: holderMode }): PlannedKey => ({ docId: lockDocId(namespace, granularity, key), namespace, granularity, key, mode: holderMode }));
  // Any total order shared by all callers prevents two partial sets from each waiting on the other.
  return keys.sort((a, b) => (a.docId < b.docId ? -1 : a.docId > b.docId ? 1 : 0));
}
