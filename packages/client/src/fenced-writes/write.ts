/**
 * The one write every fenced operation ends in: the whole document indexed with the fencing token
 * as its external version (`version_type=external_gte`, the version sent as its decimal string), so
 * the server refuses it when the document already carries a newer token. `external_gte`, not
 * `external`: the same holder may write the same document several times under one token.
 */
import type { Target } from './decide.js';
import { FencedOutError } from './errors.js';
import { currentTokenIn, documentPath, type FencedWritesClient, failureOf, isConflict, send } from './transport.js';

/** The `refresh` of a write: as the servers take it (`wait_for`: answer once a search would see it). */
export type FencedRefresh = boolean | 'wait_for';

export interface WriteTarget extends Target {
  routing?: string | undefined;
  refresh?: FencedRefresh | undefined;
}

/** The query string parameters of a write (routing and refresh when given). */
export function writeParameters(target: { routing?: string | undefined; refresh?: FencedRefresh | undefined }): Record<string, string> {
  return {
    ...(target.routing === undefined ? {} : { routing: target.routing }),
    ...(target.refresh === undefined ? {} : { refresh: String(target.refresh) }),
  };
}

/** Indexes `body` with the token as its version: the server's `result` (created or updated); FencedOutError when a newer token is there. */
export async function indexWithToken(client: FencedWritesClient, target: WriteTarget, body: Record<string, unknown>): Promise<'created' | 'updated'> {
  try {
    const answer = await send(client, {
      method: 'PUT',
      path: documentPath(target),
      querystring: { version: target.fencingToken, version_type: 'external_gte', ...writeParameters(target) },
      body,
    });
    return (answer.body as { result?: unknown } | undefined)?.result === 'created' ? 'created' : 'updated';
  } catch (error) {
    const failure = failureOf(error);
    if (isConflict(failure)) {
      throw new FencedOutError(
        { index: target.index, id: target.id, fencingToken: target.fencingToken, currentToken: currentTokenIn(failure?.reason) },
        { cause: error },
      );
    }
    throw error;
  }
}
