/** GET /locks?namespace=&granularity=&owner=&pathPrefix=&limit=&includeExpired=, or a direct invocation (search: about a second behind). */

import { presentStates } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { runtime } from '../runtime/runtime.js';

export const handler = lockHandler(runtime(), {
  name: 'list',
  fromQuery: true,
  describe: (request) => ({
    ...(request.namespace ? { namespace: request.namespace } : {}),
    granularity: request.granularity ?? 'all',
    ...(request.pathPrefix ? { key: request.pathPrefix } : {}),
  }),
  access: ({ namespace }) => ({ action: 'list', namespace }),
  run: (engine, request) => engine.list(request),
  present: presentStates,
  summary: (states) => ({ locks: states.length }),
});
