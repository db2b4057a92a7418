/** GET /inspect?namespace=&granularity=&id=&path=&mode=, or a direct invocation: who holds a target's keys now (realtime). */
import { lockHandler } from '../runtime/handler.js';
import { presentStates } from '../runtime/present.js';
import { runtime } from '../runtime/runtime.js';
import { inspectSchema, queryInput } from '../runtime/schemas.js';
import { scopeOfTarget } from '../runtime/scope.js';
import type { LockTarget } from '../core/index.js';

const rt = runtime();

export const handler = lockHandler(rt, {
  name: 'inspect',
  schema: inspectSchema,
  fromHttp: (request) => queryInput(request),
  describe: scopeOfTarget,
  run: (engine, input) => engine.inspect({ namespace: input.namespace, granularity: input.granularity, ids: input.ids, path: input.path } as LockTarget, input.mode),
  present: presentStates,
  summary: (states) => ({ locks: states.length }),
});
