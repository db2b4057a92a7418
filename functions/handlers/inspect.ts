/** GET /inspect?namespace=&granularity=&id=&path=&mode=, or a direct invocation: who holds a target's keys now (realtime). */

import { targetSchema, toTarget } from '../core/index.js';
import { lockHandler } from '../runtime/handler.js';
import { presentStates } from '../runtime/present.js';
import { runtime } from '../runtime/runtime.js';
import { queryInput } from '../runtime/schemas.js';
import { scopeOfTarget } from '../runtime/scope.js';

const rt = runtime();

export const handler = lockHandler(rt, {
  name: 'inspect',
  schema: targetSchema(rt.settings),
  fromQuery: (query) => queryInput(query),
  describe: scopeOfTarget,
  access: (input) => ({ action: 'inspect', namespace: input.namespace }),
  run: (engine, input) => engine.inspect(toTarget(input), input.mode),
  present: presentStates,
  summary: (states) => ({ locks: states.length }),
});
