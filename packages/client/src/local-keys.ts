/**
 * The lock documents a request takes, as the local lock table needs them: which ones (the same
 * ids, Unicode NFC like the service, so that equal keys meet), in which mode, and what is above
 * them (a tree path's ancestors and the namespace's root, in the intention mode). It mirrors the
 * service's multi-granularity rules without importing them: the package stands alone.
 */
import { type AcquireBody, GLOBAL_KEY, type Granularity, type HolderMode, isGranularity, type LockMode } from './wire.js';

/** One lock document a request takes locally, and in which mode. */
export interface LocalKey {
  /** Names the lock document (`<namespace>|<g|d|t>|<key>`): equal ids are the same lock in the service. */
  id: string;
  granularity: Granularity;
  key: string;
  mode: HolderMode;
}

/** Which holder modes may share one lock document (multi-granularity locking). */
const COMPATIBLE: Readonly<Record<HolderMode, ReadonlySet<HolderMode>>> = {
  IS: new Set<HolderMode>(['IS', 'IX', 'S']),
  IX: new Set<HolderMode>(['IS', 'IX']),
  S: new Set<HolderMode>(['IS', 'S']),
  X: new Set<HolderMode>(),
};

export const compatible = (requested: HolderMode, held: HolderMode): boolean => COMPATIBLE[requested].has(held);
const targetMode = (mode: LockMode): HolderMode => (mode === 'exclusive' ? 'X' : 'S');
const intentionMode = (mode: LockMode): HolderMode => (mode === 'exclusive' ? 'IX' : 'IS');

/** Lone surrogates have no NFC form; the service keeps such strings as they are. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const toNfc = (value: string): string => (LONE_SURROGATE.test(value) ? value : value.normalize('NFC'));

/** `/a/b/c` → `/a`, `/a/b`. */
export function ancestorsOf(path: string): string[] {
  const segments = path.slice(1).split('/');
  return segments.slice(0, -1).map((_, index) => `/${segments.slice(0, index + 1).join('/')}`);
}

type PlacedKey = Omit<LocalKey, 'id'>;

/** The namespace's root, in the intention mode: above every id and path of the namespace. */
const root = (mode: LockMode): PlacedKey => ({ granularity: 'global', key: GLOBAL_KEY, mode: intentionMode(mode) });

/**
 * Each granularity's local rule: the tag of its lock documents' ids, and the keys a request of it
 * takes (its own, then what is above them), or undefined when the table cannot read its target. The
 * mapped type asks for one rule per granularity of the wire contract.
 */
const LOCAL_RULES: { [G in Granularity]: { tag: string; keys(request: AcquireBody, mode: LockMode): PlacedKey[] | undefined } } = {
  global: { tag: 'g', keys: (_, mode) => [{ granularity: 'global', key: GLOBAL_KEY, mode: targetMode(mode) }] },
  document: {
    tag: 'd',
    keys: (request, mode) =>
      Array.isArray(request.ids) && request.ids.every((id) => typeof id === 'string')
        ? [...request.ids.map((id): PlacedKey => ({ granularity: 'document', key: toNfc(id), mode: targetMode(mode) })), root(mode)]
        : undefined,
  },
  tree: {
    tag: 't',
    keys(request, mode) {
      if (!(typeof request.path === 'string' && request.path.startsWith('/') && request.path.length > 1)) return undefined;
      const path = toNfc(request.path);
      const above = ancestorsOf(path).map((key): PlacedKey => ({ granularity: 'tree', key, mode: intentionMode(mode) }));
      return [{ granularity: 'tree', key: path, mode: targetMode(mode) }, ...above, root(mode)];
    },
  },
};

/**
 * The keys a request takes locally. A request the table cannot read (no ids, a path that is not
 * absolute, an unknown granularity) takes none: it goes straight through and the service refuses it.
 */
export function localKeysOf(request: AcquireBody): LocalKey[] {
  const { namespace, granularity } = request;
  const mode = request.mode ?? 'exclusive';
  if (typeof namespace !== 'string' || (mode !== 'exclusive' && mode !== 'shared') || !isGranularity(granularity)) return [];
  const placed = LOCAL_RULES[granularity].keys(request, mode) ?? [];
  const keys = placed.map((entry): LocalKey => ({ id: `${namespace}|${LOCAL_RULES[entry.granularity].tag}|${entry.key}`, ...entry }));
  // A repeated id is refused by the service; here it must not make the request wait for itself.
  return [...new Map(keys.map((entry) => [entry.id, entry])).values()];
}
