/**
 * Incarnations of the lock index and their fencing epochs. Every concrete index the alias has ever
 * pointed at is an incarnation; each gets an epoch one above every earlier one's, and its fencing
 * tokens are `epoch × 10¹⁶ + primaryTerm × 10¹³ + seqNo` (packages/engine/src/fencing.ts). Sequence numbers
 * restart in a new index (a re-creation, a snapshot restore), the epoch does not, so a token of a
 * later incarnation is larger than every token of the earlier ones.
 *
 * The epoch lives in two places:
 * - the concrete index's name, `<alias>-e<NNN>-<yyyymmdd>-<hex8>`: every Elasticsearch answer names
 *   the index (`_index`), so the store learns the epoch of each write at no extra round trip;
 * - the registry (REGISTRY_INDEX), one record per incarnation, which outlives the lock index: when the
 *   lock index is deleted, the next one still continues above it. A record is written before its
 *   index is made, as a conditional create keyed by (alias, epoch): the claim that stops two
 *   concurrent creators from making incarnations with the same epoch.
 */
import { randomBytes } from 'node:crypto';
import registryDefinition from '../../infra/index/incarnations.json' with { type: 'json' };
import { MAX_EPOCH } from '../../packages/engine/src/fencing.js';
import { responseFailure } from './errors.js';
import type { SearchClient } from './search-client.js';

/**
 * The registry of incarnations: one hidden index per cluster, shared by every lock index (records are
 * keyed by alias). Its name starts with a dot, which no lock index name may (LOCK_INDEX and --index must
 * start with a letter or digit), so it can never be taken for an incarnation `<alias>-...` nor match a
 * lock index's pattern (`locks*`); being hidden, wildcard requests (`DELETE locks-*`, `GET _cat/indices`)
 * leave it out unless they ask for hidden indices, and Elasticsearch reserves only non-hidden dot names.
 */
export const REGISTRY_INDEX = '.es-lease-locks-incarnations';
export const REGISTRY_DEFINITION = registryDefinition;

/** `-e<NNN>-<yyyymmdd>-<hex8>` at the end of a concrete index name: the epoch is NNN. */
const EPOCH_SUFFIX = /-e(\d{3})-\d{8}-[0-9a-f]{8}$/;

let lastName: string | undefined;
let lastEpoch = 0;

/**
 * The fencing epoch of the incarnation named `indexName` (an Elasticsearch answer's `_index`): NNN of
 * `...-eNNN-yyyymmdd-hex8`, 0 for a lock index made before epochs (`<alias>-yyyymmdd-hex8`, or any other
 * name). Called for every answer the store reads, so it remembers the last name it parsed: a store
 * sees one incarnation at a time.
 */
export function epochOfIncarnation(indexName: string): number {
  if (indexName === lastName) return lastEpoch;
  const match = EPOCH_SUFFIX.exec(indexName);
  lastEpoch = match ? Number(match[1]) : 0;
  lastName = indexName;
  return lastEpoch;
}

/** The name of a new incarnation of `alias` with `epoch`: `<alias>-e<NNN>-<yyyymmdd>-<hex8>` (the suffix keeps two of one day apart). */
export function incarnationName(alias: string, epoch: number, now: Date = new Date()): string {
  if (!Number.isInteger(epoch) || epoch < 1 || epoch > MAX_EPOCH) throw new RangeError(`epoch ${epoch} is outside 1..${MAX_EPOCH}`);
  const day = now.toISOString().slice(0, 10).replace(/-/g, '');
  return `${alias}-e${String(epoch).padStart(3, '0')}-${day}-${randomBytes(4).toString('hex')}`;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Whether `indexName` is named like an incarnation of `alias` (with an epoch, or from before epochs). */
export function isIncarnationOf(alias: string, indexName: string): boolean {
  return new RegExp(`^${escapeRegExp(alias)}-(?:e\\d{3}-)?\\d{8}-[0-9a-f]{8}$`).test(indexName);
}

export interface IncarnationRecord {
  alias: string;
  epoch: number;
  /** The concrete index made for it; an index that was never made (its creator failed) still uses the epoch up. */
  index: string;
  createdAt: number;
  /** `created` by index:create / ensureLockIndex, or `adopted`: a copy of a restored index (`adoptedFrom`). */
  origin: 'created' | 'adopted';
  adoptedFrom?: string;
}

export interface EpochHistory {
  /** The largest epoch of any incarnation known (registry records and indices left): 0 when none, or only ones from before epochs. */
  largest: number;
  /** Whether anything records an earlier incarnation: a registry record for the alias, or a concrete index of it. */
  known: boolean;
  /** The alias's registry records, by epoch. */
  records: IncarnationRecord[];
  /** Concrete indices of the alias in the cluster: behind it, or named like its incarnations. */
  indices: string[];
}

/**
 * What the cluster knows of the alias's incarnations. `leaveOut`: an index not to count among the
 * alias's own (an index restored from a snapshot, which is old by definition).
 */
export async function epochHistory(client: SearchClient, alias: string, options: { registry?: string; leaveOut?: string } = {}): Promise<EpochHistory> {
  const registry = options.registry ?? REGISTRY_INDEX;
  const [found, searched] = await Promise.all([
    client.indices.get({ index: [alias, `${alias}-*`], expand_wildcards: 'all', ignore_unavailable: true, allow_no_indices: true, features: ['aliases'] }),
    client.search<IncarnationRecord>({
      index: registry,
      ignore_unavailable: true,
      size: MAX_EPOCH + 100,
      query: { term: { alias } },
      sort: [{ epoch: 'asc' }],
    }),
  ]);
  const indices = Object.entries(found)
    .filter(([name, entry]) => name !== options.leaveOut && (name === alias || isIncarnationOf(alias, name) || alias in (entry.aliases ?? {})))
    .map(([name]) => name)
    .sort();
  const records = searched.hits.hits.flatMap((hit) => (hit._source ? [hit._source] : []));
  const largest = Math.max(0, ...records.map((record) => record.epoch), ...indices.map(epochOfIncarnation));
  return { largest, known: records.length > 0 || indices.length > 0, records, indices };
}

/** Why an incarnation could not get an epoch; index:create turns each into what to do. */
export class IncarnationEpochError extends Error {
  override readonly name = 'IncarnationEpochError';
  constructor(
    readonly reason: 'unknown' | 'too-low' | 'taken' | 'exhausted',
    message: string,
    readonly context: { alias: string; registry: string; largest: number; epoch?: number },
  ) {
    super(message);
  }
}

export interface EpochChoice {
  /** The operator's epoch (it must be above every known one), instead of the next one. */
  epoch?: number;
  /**
   * When nothing records an earlier incarnation: `first` starts at epoch 1 (a brand-new lock index),
   * `refuse` throws IncarnationEpochError `unknown`. Nothing recorded may also mean that the registry
   * was deleted along with the lock index, and then epoch 1 can restart the tokens.
   */
  unknownHistory: 'first' | 'refuse';
}

/** The epoch a new incarnation gets: 1 + the largest known, or the operator's. */
export function nextEpoch(alias: string, history: EpochHistory, choice: EpochChoice, registry = REGISTRY_INDEX): number {
  const context = { alias, registry, largest: history.largest };
  if (choice.epoch !== undefined) {
    if (!Number.isInteger(choice.epoch) || choice.epoch < 1 || choice.epoch > MAX_EPOCH)
      throw new RangeError(`epoch ${choice.epoch} is outside 1..${MAX_EPOCH}`);
    if (choice.epoch <= history.largest) {
      throw new IncarnationEpochError(
        'too-low',
        `epoch ${choice.epoch} is not above ${history.largest}, the largest epoch known for lock index "${alias}": its tokens would not exceed the earlier incarnations'`,
        { ...context, epoch: choice.epoch },
      );
    }
    return choice.epoch;
  }
  if (!history.known && choice.unknownHistory === 'refuse') {
    throw new IncarnationEpochError(
      'unknown',
      `nothing records an earlier incarnation of lock index "${alias}" (no record in the registry ${registry}, no index ${alias}-* left), so the epoch that keeps its fencing tokens above the earlier ones is unknown`,
      context,
    );
  }
  const epoch = history.largest + 1;
  if (epoch > MAX_EPOCH) {
    throw new IncarnationEpochError(
      'exhausted',
      `lock index "${alias}" has used all ${MAX_EPOCH} fencing epochs: give the lock service a new alias (LOCK_INDEX)`,
      {
        ...context,
        epoch,
      },
    );
  }
  return epoch;
}

/** Creates the registry unless it exists (concurrent callers: one creates it, the others find it). */
async function ensureRegistry(client: SearchClient, registry: string): Promise<void> {
  if (await client.indices.exists({ index: registry, expand_wildcards: 'all' })) return;
  try {
    await client.indices.create({ index: registry, ...(registryDefinition as object) });
  } catch (error) {
    if (responseFailure(error)?.type !== 'resource_already_exists_exception') throw error;
  }
}

/** The registry document of an epoch: `:` cannot occur in an index name, so `<alias>:<epoch>` is unambiguous. */
const recordId = (alias: string, epoch: number): string => `${alias}:${epoch}`;

/**
 * Claims `record.epoch` for an incarnation of `record.alias`: a conditional create of its registry
 * record. False when another creator holds that epoch already. The record is searchable once this
 * returns (refresh), so the next creator's history counts it.
 */
export async function claimEpoch(client: SearchClient, record: IncarnationRecord, registry = REGISTRY_INDEX): Promise<boolean> {
  await ensureRegistry(client, registry);
  try {
    await client.create({ index: registry, id: recordId(record.alias, record.epoch), document: record, refresh: true });
    return true;
  } catch (error) {
    if (responseFailure(error)?.statusCode === 409) return false;
    throw error;
  }
}

/** The registry record of one epoch of `alias`, if any (realtime). */
export async function incarnationRecord(client: SearchClient, alias: string, epoch: number, registry = REGISTRY_INDEX): Promise<IncarnationRecord | undefined> {
  const found = await client.get<IncarnationRecord>({ index: registry, id: recordId(alias, epoch) }, { ignore: [404] });
  return found.found ? found._source : undefined;
}
