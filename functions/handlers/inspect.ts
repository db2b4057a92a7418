/** GET /inspect?namespace=&granularity=&id=&path=&mode=, or a direct invocation: who holds a target's keys now (realtime). */

import { presentStates } from '../../packages/engine/src/present.js';
import { lockHandler } from '../runtime/handler.js';
import { runtime } from '../runtime/runtime.js';
import { scopeOfTarget } from '../runtime/scope.js';

export const handler = lockHandler(runtime(), {
  name: 'inspect',
  fromQuery: true,
  describe: (request) => scopeOfTarget(request.target),
  access: ({ target }) => ({ action: 'inspect', namespace: target.namespace }),
  run: (engine, request) => engine.inspect(request),
  present: presentStates,
  summary: (states) => ({ locks: states.length }),
});
