/**
 * What a create or a partial update does after its realtime read, before any write: refuse (a newer
 * token already there, a live document under a create, nothing under an update), or write the
 * document. The server still has the last word: the write carries the token as its version and is
 * refused if a newer one landed in between (FencedOutError).
 */
import { compareFencingTokens } from '../fencing-token.js';
import { FencedDocumentExistsError, FencedDocumentMissingError, FencedOutError } from './errors.js';
import { mergeDocument } from './merge.js';
import { isFencedTombstone } from './tombstone.js';
import type { StoredDocument } from './transport.js';

export interface Target {
  index: string;
  id: string;
  fencingToken: string;
}

export type Decision = { write: Record<string, unknown> } | { refuse: Error };

/** A live document, a tombstone, or nothing. */
export type DocumentState =
  | { kind: 'live'; source: unknown; hasSource: boolean; version: string | undefined }
  | { kind: 'deleted' | 'absent'; version: string | undefined };

export function stateOf(stored: StoredDocument): DocumentState {
  if (!stored.found) return { kind: 'absent', version: undefined };
  if (isFencedTombstone(stored.source)) return { kind: 'deleted', version: stored.version };
  return { kind: 'live', source: stored.source, hasSource: stored.hasSource, version: stored.version };
}

/** A newer token than ours on the document: refused before writing (the server would refuse it). */
function fencedOut(target: Target, state: DocumentState): FencedOutError | undefined {
  if (state.version === undefined || compareFencingTokens(state.version, target.fencingToken) <= 0) return undefined;
  return new FencedOutError({ ...target, currentToken: state.version });
}

export function decideCreate(target: Target, state: DocumentState, document: Record<string, unknown>): Decision {
  const newer = fencedOut(target, state);
  if (newer) return { refuse: newer };
  if (state.kind === 'live') return { refuse: new FencedDocumentExistsError({ ...target, currentToken: state.version }) };
  return { write: document };
}

export function decideUpdate(target: Target, state: DocumentState, patch: Record<string, unknown>): Decision {
  const newer = fencedOut(target, state);
  if (newer) return { refuse: newer };
  if (state.kind !== 'live') {
    return { refuse: new FencedDocumentMissingError({ ...target, deleted: state.kind === 'deleted', currentToken: state.version }) };
  }
  if (!state.hasSource || typeof state.source !== 'object' || state.source === null || Array.isArray(state.source)) {
    return {
      refuse: new Error(
        `${target.index}/${target.id} has no _source to merge a partial update into (_source disabled or excluded in the index's mapping): write the whole document with fencedIndex`,
      ),
    };
  }
  return { write: mergeDocument(state.source as Record<string, unknown>, patch) };
}
