/**
 * The lock documents a request takes, as the local lock table needs them: which ones (the same
 * ids, Unicode NFC like the service, so that equal keys meet), in which mode, and what is above
 * them (a tree path's ancestors and the namespace's root, in the intention mode). It mirrors the
 * service's multi-granularity rules without importing them: the package stands alone.
 */
import type { AcquireBody, Granularity, HolderMode, LockMode } from './wire.js';

/** One lock document a request takes locally, and in which mode. */
export interface LocalKey {
  /** Names the lock document (`<namespace>|<g|d|t>|<key>`): equal ids are the same lock in the service. */
  id: string;
  granularity: Granularity;
  key: string;
  mode: HolderMode;
}

/** The namespace's root: its global lock's key, above every id and path of the namespace. */
export const GLOBAL_KEY = '*';

const TAG: Record<Granularity, string> = { global: 'g', document: 'd', tree: 't' };

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

/**
 * The keys a request takes locally. A request the table cannot read (no ids, a path that is not
 * absolute, an unknown granularity) takes none: it goes straight through and the service refuses it.
 */
export function localKeysOf(request: AcquireBody): LocalKey[] {
  const { namespace, granularity } = request;
  const mode = request.mode ?? 'exclusive';
  if (typeof namespace !== 'string' || (mode !== 'exclusive' && mode !== 'shared')) return [];
  const key = (of: Granularity, name: string, holderMode: HolderMode): LocalKey => ({
    id: `${namespace}|${TAG[of]}|${name}`,
    granularity: of,
    key: name,
    mode: holderMode,
  });
  const root = key('global', GLOBAL_KEY, intentionMode(mode));
  let keys: LocalKey[];
  if (granularity === 'global') keys = [key('global', GLOBAL_KEY, targetMode(mode))];
  else if (granularity === 'document') {
    if (!(Array.isArray(request.ids) && request.ids.every((id) => typeof id === 'string'))) return [];
    keys = [...request.ids.map((id) => key('document', toNfc(id), targetMode(mode))), root];
  } else if (granularity === 'tree') {
    if (!(typeof request.path === 'string' && request.path.startsWith('/') && request.path.length > 1)) return [];
    const path = toNfc(request.path);
    keys = [key('tree', path, targetMode(mode)), ...ancestorsOf(path).map((above) => key('tree', above, intentionMode(mode))), root];
  } else return [];
  // A repeated id is refused by the service; here it must not make the request wait for itself.
  return [...new Map(keys.map((entry) => [entry.id, entry])).values()];
}
