/**
 * The lock index is an alias over one concrete index, its incarnation, named
 * `<alias>-e<NNN>-<yyyymmdd>-<hex8>`: NNN is the incarnation's fencing epoch (functions/store/incarnation.ts),
 * one above every earlier incarnation's, so that a re-created or restored lock index never issues a
 * fencing token below one already issued. Writes go through the alias with `require_alias`, so nothing
 * ever re-creates a deleted lock index by accident, and a lease token's note of a write names the
 * incarnation it was made in.
 */
import type { estypes } from '@elastic/elasticsearch';
import definition from '../../infra/index/lock-index.json' with { type: 'json' };
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
import { type SearchClient, serverName } from './search-client.js';

export const LOCK_INDEX_DEFINITION = definition;

/** The concrete index behind the alias, or undefined when there is no such alias. */
export async function lockIndexIncarnation(client: SearchClient, alias: string): Promise<string | undefined> {
  const exists = await client.indices.existsAlias({ name: alias });
  if (!exists) return undefined;
  const found = await client.indices.getAlias({ name: alias });
  const writeIndex = Object.entries(found).find(([, entry]) => entry.aliases[alias]?.is_write_index)?.[0];
  return writeIndex ?? Object.keys(found)[0];
}

export interface EnsureLockIndexOptions {
  /**
   * A concrete index named like the alias (made by an earlier version) is replaced when no lease in
   * it is live. For the project's own throwaway node; on a real cluster its live holders would vanish
   * with it, so there it stays an error for an operator to decide.
   */
  replaceIdleLegacyIndex?: boolean;
  /** The new incarnation's epoch, when an operator knows better than the registry (it was lost): above every known one. */
  epoch?: number;
  /**
   * When nothing records an earlier incarnation (no registry record for the alias, no index of it
   * left): `first` (the default: tests, local stacks, a brand-new deployment) makes epoch 1; `refuse`
   * throws IncarnationEpochError `unknown`, as index:create does unless told `--first`, because the
   * registry may have been deleted along with the lock index.
   */
  unknownHistory?: EpochChoice['unknownHistory'];
  /** The registry of incarnations (default REGISTRY_INDEX); tests use one of their own. */
  registry?: string;
  /**
   * Primary shards of a NEW incarnation (default 1; 1 to MAX_LOCK_INDEX_SHARDS). The store routes every
   * lock document by its namespace (functions/store/routing.ts), so a namespace lives on one shard and
   * its fencing tokens stay monotonic, while namespaces spread over the shards. An existing lock index
   * keeps its shard count (Elasticsearch cannot change it in place).
   */
  shards?: number;
}

/** Elasticsearch's own ceiling for one index (`index.number_of_shards`, without changing its limits). */
export const MAX_LOCK_INDEX_SHARDS = 1_024;

/**
 * The settings and mappings of a new incarnation with `shards` primary shards. With one, exactly the
 * definition (infra/index/lock-index.json). With several, routing is also required
 * (`_routing.required`): a request without it would put or look for a document on the shard its id
 * hashes to, not its namespace's, so Elasticsearch refuses it instead of answering "not found".
 */
export function lockIndexDefinition(shards = 1): typeof definition & { mappings: { _routing?: { required: boolean } } } {
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_LOCK_INDEX_SHARDS) {
    throw new RangeError(`shards: must be a whole number from 1 to ${MAX_LOCK_INDEX_SHARDS} (got ${shards})`);
  }
  if (shards === 1) return definition;
  return {
    settings: { index: { ...definition.settings.index, number_of_shards: shards } },
    mappings: { ...definition.mappings, _routing: { required: true } },
  };
}

/** The number of primary shards of the lock index behind the alias, or undefined when there is no such alias. */
export async function lockIndexShards(client: SearchClient, alias: string): Promise<number | undefined> {
  const incarnation = await lockIndexIncarnation(client, alias);
  if (!incarnation) return undefined;
  const found = await client.indices.get({ index: incarnation });
  const shards = Object.values(found)[0]?.settings?.index?.number_of_shards;
  return shards === undefined ? undefined : Number(shards);
}

/**
 * How long a creator that lost the claim of an epoch waits for the winner's lock index to appear before
 * it claims the next epoch (the winner died between its claim and its index).
 */
const CLAIM_WAIT_MS = 10_000;
const CLAIM_ATTEMPTS = 5;

/**
 * Creates the lock index (a new incarnation behind the alias `alias`, with the next epoch) unless it
 * exists; its mapping is checked for the fields the engine writes. Safe to run concurrently: creators
 * claim the epoch in the registry first (one wins each epoch), and two cannot both make a write index
 * for the alias.
 */
export async function ensureLockIndex(client: SearchClient, alias: string, options: EnsureLockIndexOptions = {}): Promise<'created' | 'exists'> {
  // A bad shard count is the caller's mistake, refused before anything is claimed.
  lockIndexDefinition(options.shards);
  try {
    if (!(await lockIndexIncarnation(client, alias)) && (await createIncarnation(client, alias, options))) return 'created';
    await upgradeMapping(client, alias);
    return 'exists';
  } catch (error) {
    // Its own refusals go out as they are; the client's errors become domain errors.
    if (clientErrorKind(error) === undefined) throw error;
    throw translateError(error, 'create lock index', undefined, false, serverName(client));
  }
}

/** True when this call made the incarnation, false when another creator did meanwhile. */
async function createIncarnation(client: SearchClient, alias: string, options: EnsureLockIndexOptions): Promise<boolean> {
  const registry = options.registry ?? REGISTRY_INDEX;
  const choice: EpochChoice = { ...(options.epoch !== undefined ? { epoch: options.epoch } : {}), unknownHistory: options.unknownHistory ?? 'first' };
  // Read before a legacy index goes: it is history too (epoch 0).
  let history = await epochHistory(client, alias, { registry });
  const knownBefore = history.known;
  if (await client.indices.exists({ index: alias })) {
    const idle = options.replaceIdleLegacyIndex && (await liveLeases(client, alias)) === 0;
    if (!idle) {
      throw new Error(
        `"${alias}" is a concrete index, not the alias of a lock index (an index made by an earlier version, or by hand). Let its leases run out, delete it, and run \`npm run index:create\` again.`,
      );
    }
    await client.indices.delete({ index: alias });
  }
  for (let attempt = 1; ; attempt++) {
    if (await lockIndexIncarnation(client, alias)) return false;
    const epoch = nextEpoch(alias, history, choice, registry);
    const index = incarnationName(alias, epoch);
    if (!(await claimEpoch(client, { alias, epoch, index, createdAt: Date.now(), origin: 'created' }, registry))) {
      // Another creator holds this epoch: it is making the lock index now, or died trying (the epoch stays used).
      if (await aliasAppears(client, alias, CLAIM_WAIT_MS)) return false;
      if (choice.epoch !== undefined) {
        throw new IncarnationEpochError(
          'taken',
          `epoch ${epoch} of lock index "${alias}" is claimed already (registry ${registry}), but no lock index appeared`,
          {
            alias,
            registry,
            largest: history.largest,
            epoch,
          },
        );
      }
      if (attempt >= CLAIM_ATTEMPTS) throw new Error(`could not claim an epoch for lock index "${alias}" in ${CLAIM_ATTEMPTS} attempts (registry ${registry})`);
      history = await epochHistory(client, alias, { registry });
      history.known ||= knownBefore;
      continue;
    }
    try {
      await client.indices.create({ index, ...(lockIndexDefinition(options.shards) as object), aliases: { [alias]: { is_write_index: true } } });
      return true;
    } catch (error) {
      // Another creator won the race (the alias would have two write indices, which Elasticsearch refuses); this epoch stays unused.
      if (!(await lockIndexIncarnation(client, alias))) throw error;
      return false;
    }
  }
}

async function aliasAppears(client: SearchClient, alias: string, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (let pause = 50; ; pause = Math.min(pause * 2, 1_000)) {
    if (await lockIndexIncarnation(client, alias)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** Adds the fields of this version to a lock index of an earlier one; refuses an index that is not a lock index. */
async function upgradeMapping(client: SearchClient, index: string): Promise<void> {
  let missing = await missingFields(client, index);
  if (missing.length > 0 && !missing.some((field) => LOCK_DOCUMENT_CORE.includes(field))) {
    // A lock index of an earlier version lacks only fields added since: adding a field to a mapping is safe while in use.
    await client.indices.putMapping({ index, properties: definition.mappings.properties as Record<string, estypes.MappingProperty> });
    missing = await missingFields(client, index);
  }
  if (missing.length > 0) throw new Error(`Index ${index} exists but is not a lock index of this version (missing fields: ${missing.join(', ')}).`);
}

export interface AdoptedIncarnation {
  /** The new incarnation: a copy of the adopted index, now behind the alias. */
  index: string;
  epoch: number;
  /** Indices the alias pointed at before (their holders no longer count); the adopted index itself is deleted. */
  detached: string[];
}

/**
 * Makes `source` (a lock index restored from a snapshot under another name) the lock index as a NEW
 * incarnation: its documents, holders included, are cloned into `<alias>-e<next>-...`, recorded in the
 * registry, and the alias moves there in one step. The restored index keeps the epoch of the day it was
 * snapshotted, and tokens issued after the snapshot are above its own; the copy's tokens are above all.
 *
 * `source` gets a write block (a clone needs one) and is deleted once the alias points at the copy:
 * a lease token's note may name it, and a delete aimed at a missing index is read as "gone" where one
 * aimed at a blocked index would fail. Without a registry record for the alias (the registry was lost
 * too), `epoch` must be given: the restored index alone says nothing of the epochs used after it.
 */
export async function adoptLockIndex(
  client: SearchClient,
  alias: string,
  source: string,
  options: { epoch?: number; registry?: string } = {},
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
        return await cloneAndSwitch(client, alias, source, index, epoch);
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

async function cloneAndSwitch(client: SearchClient, alias: string, source: string, index: string, epoch: number): Promise<AdoptedIncarnation> {
  await client.indices.addBlock({ index: source, block: 'write' });
  // The copy starts writable, and the answer waits for its primary: the alias never points at an index that cannot take a write.
  const cloned = await client.indices.clone({ index: source, target: index, settings: { 'index.blocks.write': false }, wait_for_active_shards: 1 });
  if (!cloned.shards_acknowledged) {
    throw new Error(
      `the copy ${index} of ${source} did not start in time, and the alias ${alias} was not moved: check the cluster's health, delete ${index}, and run again`,
    );
  }
  await upgradeMapping(client, index);
  const behind = await client.indices.getAlias({ name: alias }, { ignore: [404] });
  const detached = Object.keys(behind).filter((name) => name !== 'error' && name !== 'status');
  // One request: the alias is never missing nor on two indices, and a concurrent change of it makes this fail instead of both applying.
  await client.indices.updateAliases({
    actions: [...detached.map((name) => ({ remove: { index: name, alias } })), { add: { index, alias, is_write_index: true } }],
  });
  await client.indices.delete({ index: source });
  return { index, epoch, detached: detached.filter((name) => name !== source) };
}

/** Fields whose absence means "not a lock index" rather than "a lock index of an earlier version". */
const LOCK_DOCUMENT_CORE = ['namespace', 'granularity', 'key', 'holders', 'holders.lease', 'holders.expiresAt'];

async function missingFields(client: SearchClient, index: string): Promise<string[]> {
  const mapping = await client.indices.getMapping({ index });
  const properties = Object.values(mapping)[0]?.mappings.properties ?? {};
  return Object.keys(definition.mappings.properties.holders.properties)
    .map((field) => `holders.${field}`)
    .concat(Object.keys(definition.mappings.properties))
    .filter((field) => {
      const [top, sub] = field.split('.');
      const entry = properties[top!] as { properties?: Record<string, unknown> } | undefined;
      return !entry || (sub !== undefined && !(sub in (entry.properties ?? {})));
    });
}

async function liveLeases(client: SearchClient, index: string): Promise<number> {
  await client.indices.refresh({ index });
  const { count } = await client.count({ index, query: { range: { maxExpiresAt: { gt: Date.now() } } } });
  return count;
}

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

/**
 * Counts the tickets in the incarnation behind `alias` that have not run out. `queue` is not
 * indexed: every queued document has `minExpiresAt` (the queue's earliest expiry is among the
 * instants it is the minimum of), so the documents that have it are searched and their queues read.
 */
export async function liveTickets(client: SearchClient, alias: string, now = Date.now()): Promise<LiveTickets | undefined> {
  const incarnation = await lockIndexIncarnation(client, alias);
  if (!incarnation) return undefined;
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

export interface RecreatedLockIndex {
  /** The incarnation deleted (undefined: there was no lock index, and one was created). */
  previous?: string;
  index: string;
  epoch: number;
  /** The live tickets the previous incarnation had (dropped, untold): only ever non-zero when forced. */
  dropped: number;
}

/**
 * Makes the next incarnation of the lock index: deletes the one behind `alias` (its leases and tickets
 * with it) and creates a new one with the next epoch. Refuses with LiveTicketsError while the current
 * incarnation holds live tickets, whose waiters would never be told (a waiter on a channel waits for
 * its message), unless `force`. A ticket queued between the count and the delete is still dropped.
 */
export async function recreateLockIndex(
  client: SearchClient,
  alias: string,
  options: EnsureLockIndexOptions & { force?: boolean } = {},
): Promise<RecreatedLockIndex> {
  lockIndexDefinition(options.shards);
  let tickets: LiveTickets | undefined;
  try {
    tickets = await liveTickets(client, alias);
  } catch (error) {
    throw translateError(error, 'count live tickets', alias, false, serverName(client));
  }
  if (tickets && tickets.tickets > 0 && !options.force) throw new LiveTicketsError({ ...tickets, alias });
  if (tickets) await deleteLockIndex(client, alias);
  await ensureLockIndex(client, alias, options);
  const index = (await lockIndexIncarnation(client, alias))!;
  return {
    ...(tickets ? { previous: tickets.incarnation } : {}),
    index,
    epoch: epochOfIncarnation(index),
    dropped: tickets?.tickets ?? 0,
  };
}

/**
 * Deletes the lock index: every concrete index behind the alias (Elasticsearch refuses to delete through
 * an alias). The registry keeps their records, so the next incarnation continues above their epochs.
 */
export async function deleteLockIndex(client: SearchClient, alias: string): Promise<void> {
  const found = await client.indices.getAlias({ name: alias }, { ignore: [404] });
  const concrete = Object.keys(found).filter((name) => name !== 'error' && name !== 'status');
  if (concrete.length > 0) await client.indices.delete({ index: concrete }, { ignore: [404] });
  else await client.indices.delete({ index: alias }, { ignore: [404] });
}
