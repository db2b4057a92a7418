/** GET /status, or a direct invocation: the lock index's incarnation, shards, counts and oldest lease (needs list on every namespace). */

import { presentStatus } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { runtime } from '../runtime/runtime.js';

export const handler = lockHandler(runtime(), {
  name: 'status',
  fromQuery: true,
  describe: () => ({ granularity: 'all' }),
  access: () => ({ action: 'list' }),
  run: (engine) => engine.status(),
  present: presentStatus,
  summary: (status) => ({ locks: status.locks, waiters: status.waiters, scanned: status.scanned }),
});
