/**
 * Fencing that Elasticsearch enforces for a document written under a lock: the write carries the
 * grant's fencing token as an external version (`version_type: external_gte`), so Elasticsearch
 * refuses a write whose token is older than the one the document already has. A holder paused past
 * its lease, whose lock another caller took over and wrote under, then cannot overwrite that work.
 *
 * Holds only if every writer of the document goes through here with its lock's token (a plain index
 * without a version resets the version and with it the fence), and the tokens come from one lock
 * index (a new incarnation restarts them). `external_gte`, not `external`: the same holder may write
 * the same document several times under one grant.
 */

import { StaleFencingTokenError } from '../core/errors.js';
import type { FencingToken } from '../core/fencing.js';
import { responseFailure, translateError } from './errors.js';
import { type SearchClient, serverName } from './search-client.js';

export interface FencedWrite<T> {
  index: string;
  id: string;
  document: T;
  fencingToken: FencingToken;
  /** Passed through to the index request (e.g. `wait_for`); the default leaves it to the index. */
  refresh?: boolean | 'wait_for';
}

const isVersionConflict = (error: unknown): boolean => responseFailure(error)?.statusCode === 409;

/** Indexes the document with the token as its version. Throws StaleFencingTokenError when a newer holder already wrote it. */
export async function writeFenced<T>(client: SearchClient, write: FencedWrite<T>): Promise<{ version: FencingToken }> {
  try {
    await client.index({
      index: write.index,
      id: write.id,
      document: write.document,
      // Tokens pass 2^53: sent as the decimal string they are, never as a JSON number.
      version: write.fencingToken as unknown as number,
      version_type: 'external_gte',
      ...(write.refresh === undefined ? {} : { refresh: write.refresh }),
    });
    return { version: write.fencingToken };
  } catch (error) {
    if (isVersionConflict(error))
      throw new StaleFencingTokenError(undefined, { index: write.index, id: write.id, fencingToken: write.fencingToken, cause: error });
    throw translateError(error, `fenced write of ${write.index}/${write.id}`, undefined, true, serverName(client));
  }
}

/** Deletes the document unless a newer holder wrote it since (then StaleFencingTokenError). A missing document is fine. */
export async function deleteFenced(client: SearchClient, target: Omit<FencedWrite<never>, 'document'>): Promise<{ deleted: boolean }> {
  try {
    const response = await client.delete(
      {
        index: target.index,
        id: target.id,
        version: target.fencingToken as unknown as number,
        version_type: 'external_gte',
        ...(target.refresh === undefined ? {} : { refresh: target.refresh }),
      },
      { ignore: [404] },
    );
    return { deleted: response.result === 'deleted' };
  } catch (error) {
    if (isVersionConflict(error))
      throw new StaleFencingTokenError(undefined, { index: target.index, id: target.id, fencingToken: target.fencingToken, cause: error });
    throw translateError(error, `fenced delete of ${target.index}/${target.id}`, undefined, true, serverName(client));
  }
}
