/**
 * Moving the lock index to a new incarnation: re-creation (index:create --recreate) and adoption of a
 * restored index (--adopt). Both close the incarnation they leave before the alias moves: a write
 * block, so that a write decided on it (its alias look made before the move, its request sent
 * after) fails instead of landing in an index nobody reads any more (the store answers it `missing`).
 * Re-creation carries the unexpired completion records over (outcomes only), adoption those of the
 * incarnation it detaches: a record is never removed before its TTL (docs/work-once.md).
 */
import type { estypes } from '@elastic/elasticsearch';
import { allSharedSettings, type SharedSettings } from '../../packages/engine/src/settings.js';
import { clientErrorKind, translateError } from './errors.js';
import {
  claimEpoch,
  type EpochChoice,
  epochHistory,
  epochOfIncarnation,
  IncarnationEpochError,
  incarnationName,
  nextEpoch,
  REGISTRY_INDEX,
} from './incarnation.js';
import {
  CLAIM_ATTEMPTS,
  createIncarnation,
  type EnsureLockIndexOptions,
  ensureLockIndex,
  LOCK_DOCUMENT_CORE,
  lockIndexDefinition,
  lockIndexIncarnation,
  missingFields,
  upgradeMapping,
} from './lock-index.js';
import { routingOf } from './routing.js';
import { type SearchClient, serverName } from './search-client.js';
import { readSharedSettings, recordSharedSettings } from './shared-settings.js';

/** The concrete indices behind `alias` (one, unless made by hand). */
async function behindAlias(client: SearchClient, alias: string): Promise<string[]> {
  const found = await client.indices.getAlias({ name: alias }, { ignore: [404] });
  return Object.keys(found).filter((name) => name !== 'error' && name !== 'status');
}

/** Closes incarnations the alias is about to leave: nothing is written to them any more. */
const closeIncarnations = async (client: SearchClient, indices: string[]): Promise<void> => {
  for (const index of indices) await client.indices.addBlock({ index, block: 'write' });
};

/** Opens them again (a change that failed before the alias moved). */
const reopenIncarnations = async (client: SearchClient, indices: string[]): Promise<void> => {
  if (indices.length > 0) await client.indices.putSettings({ index: indices, settings: { 'index.blocks.write': false } });
};

/** Moves the alias from `from` to `to` in one request: it is never missing nor on two indices. */
const moveAlias = (client: SearchClient, alias: string, from: string[], to: string) =>
  client.indices.updateAliases({ actions: [...from.map((index) => ({ remove: { index, alias } })), { add: { index: to, alias, is_write_index: true } }] });

/** The shared settings a new incarnation records: those given explicitly, else those `from` records (the first that records any). */
async function sharedSettingsFor(client: SearchClient, given: SharedSettings | undefined, from: string[]): Promise<SharedSettings> {
  for (const index of from) {
    const recorded = await readSharedSettings(client, index);
    if (recorded) return { ...recorded, ...given };
  }
  return { ...given };
}

// ---- Completion records ----

const RECORDS_PAGE = 500;

/** A work document as the copy needs it: `work` is stored, not indexed, so it is read from _source. */
interface RecordSource {
  work?: { claim?: unknown; outcome?: { expiresAt?: number } };
  [field: string]: unknown;
}

/**
 * Copies the completion records (work documents with an outcome) of `from` that the sweeper would not
 * yet delete (their expiry plus `skewMs` still ahead) into `to`, outcomes only: a claim named a lease
 * of the incarnation left, which holds nothing in the new one. `overwrite`: replace a document of the
 * same id in `to` (adoption: the detached incarnation's records are newer than the restored
 * snapshot's). `from` takes no writes any more (closed), so the copy misses none. The number copied.
 */
async function carryRecords(client: SearchClient, from: string[], to: string, options: { skewMs: number; overwrite: boolean; now?: number }): Promise<number> {
  if (from.length === 0) return 0;
  const keptAfter = (options.now ?? Date.now()) - options.skewMs;
  await client.indices.refresh({ index: from });
  let carried = 0;
  let after: estypes.SortResults | undefined;
  for (;;) {
    const page = await client.search<RecordSource>({
      index: from,
      query: { bool: { filter: [{ prefix: { key: '~work/' } }, { range: { minExpiresAt: { gt: keptAfter } } }] } },
      sort: [{ minExpiresAt: 'asc' }, { lockId: 'asc' }],
      size: RECORDS_PAGE,
      ...(after ? { search_after: after } : {}),
    });
    const records = page.hits.hits.flatMap((hit) => {
      const outcome = hit._source?.work?.outcome;
      if (!hit._source?.work || !outcome || (outcome.expiresAt ?? 0) <= keptAfter) return [];
      const { claim: _, ...work } = hit._source.work;
      return [{ docId: hit._id!, body: { ...hit._source, work, minExpiresAt: outcome.expiresAt } }];
    });
    if (records.length > 0) {
      const action = options.overwrite ? 'index' : 'create';
      const written = await client.bulk({
        index: to,
        refresh: false,
        operations: records.flatMap(({ docId, body }) => [{ [action]: { _id: docId, routing: routingOf(docId) } }, body]),
      });
      const failed = written.items.map((item) => Object.values(item)[0]!).filter((item) => item.error);
      if (failed.length > 0) {
        throw new Error(`${failed.length} completion record(s) could not be copied into ${to}: ${failed[0]!.error!.type}: ${failed[0]!.error!.reason}`);
      }
      carried += records.length;
    }
    if (page.hits.hits.length < RECORDS_PAGE) return carried;
    after = page.hits.hits.at(-1)!.sort;
  }
}

// ---- Tickets ----

/** The live tickets (queued waiters) of one incarnation: they live only in its lock documents. */
export interface LiveTickets {
  incarnation: string;
  tickets: number;
  /** Lock documents with at least one of them. */
  locks: number;
  /** Waiters told on a channel (SQS, EventBridge, Step Functions): nobody else would tell them the index is gone. */
  withWake: number;
  /** When the last of them runs out (epoch ms); 0 when there are none. */
  until: number;
}

const TICKETS_PAGE = 1_000;

/** Only the part of a lock document the count needs; `queue` is stored but not indexed, so it is read from _source. */
interface QueuedSource {
  queue?: Array<{ expiresAt?: number; wake?: unknown }>;
}

/** Counts the tickets in the incarnation behind `alias` that have not run out (undefined: no lock index). */
export async function liveTickets(client: SearchClient, alias: string, now = Date.now()): Promise<LiveTickets | undefined> {
  const incarnation = await lockIndexIncarnation(client, alias);
  return incarnation ? ticketsIn(client, incarnation, now) : undefined;
}

/**
 * `queue` is not indexed: every queued document has `minExpiresAt` (the queue's earliest expiry is
 * among the instants it is the minimum of), so the documents that have it are searched and their queues read.
 */
async function ticketsIn(client: SearchClient, incarnation: string, now = Date.now()): Promise<LiveTickets> {
  await client.indices.refresh({ index: incarnation });
  const found: LiveTickets = { incarnation, tickets: 0, locks: 0, withWake: 0, until: 0 };
  let after: estypes.SortResults | undefined;
  for (;;) {
    const page = await client.search<QueuedSource>({
      index: incarnation,
      query: { exists: { field: 'minExpiresAt' } },
      _source: ['queue.expiresAt', 'queue.wake'],
      sort: [{ minExpiresAt: 'asc' }, { lockId: 'asc' }],
      size: TICKETS_PAGE,
      ...(after ? { search_after: after } : {}),
    });
    for (const hit of page.hits.hits) countTickets(found, hit._source?.queue ?? [], now);
    if (page.hits.hits.length < TICKETS_PAGE) return found;
    after = page.hits.hits.at(-1)!.sort;
  }
}

function countTickets(found: LiveTickets, queue: NonNullable<QueuedSource['queue']>, now: number): void {
  const live = queue.filter((ticket) => (ticket.expiresAt ?? 0) > now);
  if (live.length === 0) return;
  found.locks++;
  found.tickets += live.length;
  found.withWake += live.filter((ticket) => ticket.wake !== undefined).length;
  found.until = Math.max(found.until, ...live.map((ticket) => ticket.expiresAt!));
}

/** Re-creating the lock index would drop waiters that nothing would tell. */
export class LiveTicketsError extends Error {
  override readonly name = 'LiveTicketsError';
  constructor(readonly context: LiveTickets & { alias: string }) {
    super(
      `lock index "${context.alias}" (incarnation ${context.incarnation}) has ${context.tickets} live ticket${context.tickets === 1 ? '' : 's'} (queued waiters, ${context.withWake} on a wake channel) in ${context.locks} lock${context.locks === 1 ? '' : 's'}, the last running out at ${new Date(context.until).toISOString()}: a new incarnation would drop them without telling their waiters. Wait until then, or force it.`,
    );
  }
}

// ---- Re-creation ----

export interface RecreatedLockIndex {
  /** The incarnation deleted (undefined: there was no lock index, and one was created). */
  previous?: string;
  index: string;
  epoch: number;
  /** The live tickets the previous incarnation had (dropped, untold): only ever non-zero when forced. */
  dropped: number;
  /** The completion records copied from the previous incarnation (outcomes only). */
  carried: number;
  /** The shared settings the new incarnation records. */
  sharedSettings: SharedSettings;
}

/**
 * Makes the next incarnation of the lock index in place of the one behind `alias`: creates it (the
 * next epoch; the shared settings given, else the previous one's), closes the previous one (a write
 * block), copies its unexpired completion records over (outcomes only), moves the alias, and deletes
 * the previous one with its leases and tickets. Refuses with LiveTicketsError while the previous
 * incarnation holds live tickets, whose waiters would never be told, unless `force`: counted again
 * once it is closed, so a ticket queued meanwhile is refused too. Nothing changes when it refuses or
 * fails before the alias moves (the previous one is opened again, the new one deleted).
 */
export async function recreateLockIndex(
  client: SearchClient,
  alias: string,
  options: EnsureLockIndexOptions & { force?: boolean } = {},
): Promise<RecreatedLockIndex> {
  lockIndexDefinition(options.shards);
  try {
    const previous = await lockIndexIncarnation(client, alias);
    if (!previous) {
      await ensureLockIndex(client, alias, options);
      const index = (await lockIndexIncarnation(client, alias))!;
      return { index, epoch: epochOfIncarnation(index), dropped: 0, carried: 0, sharedSettings: (await readSharedSettings(client, index)) ?? {} };
    }
    const refuse = (tickets: LiveTickets) => {
      if (tickets.tickets > 0 && !options.force) throw new LiveTicketsError({ ...tickets, alias });
    };
    refuse(await ticketsIn(client, previous));
    const leaving = await behindAlias(client, alias);
    const sharedSettings = await sharedSettingsFor(client, options.sharedSettings, [previous]);
    const index = (await createIncarnation(client, alias, { ...options, sharedSettings }, previous))!;
    let tickets: LiveTickets;
    let carried: number;
    try {
      await closeIncarnations(client, leaving);
      tickets = await ticketsIn(client, previous);
      refuse(tickets);
      carried = await carryRecords(client, leaving, index, { skewMs: allSharedSettings(sharedSettings).maxClockSkewMs, overwrite: false });
      await moveAlias(client, alias, leaving, index);
    } catch (error) {
      // Unless the alias moved after all (an answer lost), the previous incarnation stays the lock index, open again.
      if ((await lockIndexIncarnation(client, alias).catch(() => undefined)) === previous) {
        await reopenIncarnations(client, leaving);
        await client.indices.delete({ index }, { ignore: [404] });
      }
      throw error;
    }
    await client.indices.delete({ index: leaving }, { ignore: [404] });
    return { previous, index, epoch: epochOfIncarnation(index), dropped: tickets.tickets, carried, sharedSettings: allSharedSettings(sharedSettings) };
  } catch (error) {
    if (clientErrorKind(error) === undefined) throw error;
    throw translateError(error, 're-create lock index', undefined, false, serverName(client));
  }
}

// ---- Adoption ----

export interface AdoptedIncarnation {
  /** The new incarnation: a copy of the adopted index, now behind the alias. */
  index: string;
  epoch: number;
  /** Indices the alias pointed at before (closed: their holders no longer count); the adopted index itself is deleted. */
  detached: string[];
  /** The completion records copied from the detached incarnations (outcomes only). */
  carried: number;
  /** The shared settings the new incarnation records. */
  sharedSettings: SharedSettings;
}

/**
 * Makes `source` (a lock index restored from a snapshot under another name) the lock index as a NEW
 * incarnation: its documents, holders included, are cloned into `<alias>-e<next>-...`, recorded in the
 * registry, and the alias moves there in one step. The restored index keeps the epoch of the day it was
 * snapshotted, and tokens issued after the snapshot are above its own; the copy's tokens are above all.
 *
 * `source` gets a write block (a clone needs one) and is deleted once the alias points at the copy:
 * a lease token's note may name it, and a delete aimed at a missing index is read as "gone" where one
 * aimed at a blocked index would fail. The incarnations the alias leaves are closed (a write block)
 * before it moves, and their unexpired completion records are copied into the copy. The copy records
 * the shared settings given, else those of the incarnation left, else the restored index's. Without a
 * registry record for the alias (the registry was lost too), `epoch` must be given: the restored index
 * alone says nothing of the epochs used after it.
 */
export async function adoptLockIndex(
  client: SearchClient,
  alias: string,
  source: string,
  options: { epoch?: number; registry?: string; sharedSettings?: SharedSettings } = {},
): Promise<AdoptedIncarnation> {
  const registry = options.registry ?? REGISTRY_INDEX;
  try {
    if (source === alias || (await client.indices.existsAlias({ name: source }))) {
      throw new Error(`"${source}" is an alias, not a concrete index: adopt the concrete index behind it`);
    }
    if (!(await client.indices.exists({ index: source }))) throw new Error(`there is no index "${source}" to adopt`);
    const core = (await missingFields(client, source)).filter((field) => LOCK_DOCUMENT_CORE.includes(field));
    if (core.length > 0) throw new Error(`"${source}" is not a lock index (missing fields: ${core.join(', ')})`);
    const choice: EpochChoice = { ...(options.epoch !== undefined ? { epoch: options.epoch } : {}), unknownHistory: 'refuse' };
    for (let attempt = 1; ; attempt++) {
      const history = await epochHistory(client, alias, { registry, leaveOut: source });
      history.largest = Math.max(history.largest, epochOfIncarnation(source));
      const epoch = nextEpoch(alias, history, choice, registry);
      const index = incarnationName(alias, epoch);
      if (await claimEpoch(client, { alias, epoch, index, createdAt: Date.now(), origin: 'adopted', adoptedFrom: source }, registry)) {
        return await cloneAndSwitch(client, alias, source, index, epoch, options.sharedSettings);
      }
      if (choice.epoch !== undefined) {
        throw new IncarnationEpochError('taken', `epoch ${epoch} of lock index "${alias}" is claimed already (registry ${registry})`, {
          alias,
          registry,
          largest: history.largest,
          epoch,
        });
      }
      if (attempt >= CLAIM_ATTEMPTS) throw new Error(`could not claim an epoch for lock index "${alias}" in ${CLAIM_ATTEMPTS} attempts (registry ${registry})`);
    }
  } catch (error) {
    if (clientErrorKind(error) === undefined) throw error;
    throw translateError(error, 'adopt lock index', undefined, false, serverName(client));
  }
}

async function cloneAndSwitch(
  client: SearchClient,
  alias: string,
  source: string,
  index: string,
  epoch: number,
  given: SharedSettings | undefined,
): Promise<AdoptedIncarnation> {
  await client.indices.addBlock({ index: source, block: 'write' });
  // The copy starts writable, and the answer waits for its primary: the alias never points at an index that cannot take a write.
  const cloned = await client.indices.clone({ index: source, target: index, settings: { 'index.blocks.write': false }, wait_for_active_shards: 1 });
  if (!cloned.shards_acknowledged) {
    throw new Error(
      `the copy ${index} of ${source} did not start in time, and the alias ${alias} was not moved: check the cluster's health, delete ${index}, and run again`,
    );
  }
  await upgradeMapping(client, index);
  const behind = await behindAlias(client, alias);
  const sharedSettings = await sharedSettingsFor(client, given, [...behind, index]);
  await recordSharedSettings(client, index, allSharedSettings(sharedSettings));
  const leaving = behind.filter((name) => name !== source);
  let carried: number;
  try {
    await closeIncarnations(client, leaving);
    carried = await carryRecords(client, leaving, index, { skewMs: allSharedSettings(sharedSettings).maxClockSkewMs, overwrite: true });
    // One request: the alias is never missing nor on two indices, and a concurrent change of it makes this fail instead of both applying.
    await moveAlias(client, alias, behind, index);
  } catch (error) {
    if ((await lockIndexIncarnation(client, alias).catch(() => undefined)) !== index) await reopenIncarnations(client, leaving);
    throw error;
  }
  await client.indices.delete({ index: source });
  return { index, epoch, detached: leaving, carried, sharedSettings: allSharedSettings(sharedSettings) };
}
