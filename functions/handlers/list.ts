/** GET /locks?namespace=&granularity=&owner=&pathPrefix=&limit=&includeExpired=, or a direct invocation (search: about a second behind). */
import { lockHandler } from '../runtime/handler.js';
import { presentStates } from '../runtime/present.js';
import { runtime } from '../runtime/runtime.js';
import { listSchema, queryInput } from '../runtime/schemas.js';

const rt = runtime();

export const handler = lockHandler(rt, {
  name: 'list',
  schema: listSchema(rt.settings),
  fromQuery: (query) => queryInput(query, ['limit'], ['includeExpired']),
  describe: (input) => ({
    ...(input.namespace ? { namespace: input.namespace } : {}),
    granularity: input.granularity ?? 'all',
    ...(input.pathPrefix ? { key: input.pathPrefix } : {}),
  }),
  access: (input) => ({ action: 'list', namespace: input.namespace }),
  run: (engine, input) => engine.list(input),
  present: presentStates,
  summary: (states) => ({ locks: states.length }),
});
