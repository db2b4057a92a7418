/** The shapes the fenced write functions take and answer. */
import type { FencingTokenSource } from './validate.js';
import type { FencedRefresh } from './write.js';

/** Which document, under which token. */
export interface FencedTarget {
  index: string;
  id: string;
  /** The lock's fencing token: the string, or the lock handle itself (anything with `fencingToken`). */
  fencingToken: FencingTokenSource;
  /** The document's custom routing, if your index routes by one (every write and read of the document must give the same). */
  routing?: string;
  refresh?: FencedRefresh;
}

/** A write that landed. */
export interface FencedWriteResult {
  index: string;
  id: string;
  /** The token it was written with, now the document's version. */
  fencingToken: string;
  /**
   * `created` or `updated` (index, create, update); `deleted` or `not_found` (delete: whether a
   * document or a tombstone was there; the tombstone is written either way).
   */
  result: 'created' | 'updated' | 'deleted' | 'not_found';
}
