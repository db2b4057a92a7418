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
import { allSharedSettings, type SharedSettings } from '../../packages/engine/src/settings.js';
import { clientErrorKind, translateError } from './errors.js';
import { claimEpoch, type EpochChoice, epochHistory, IncarnationEpochError, incarnationName, nextEpoch, REGISTRY_INDEX } from './incarnation.js';
import { type SearchClient, serverName } from './search-client.js';
import { metaWith } from './shared-settings.js';

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
  /**
   * The shared settings a NEW incarnation records (packages/engine/src/settings.ts, SHARED_SETTINGS), the
   * defaults for those not given: every engine on the lock index takes them (shared-settings.ts). An
   * existing lock index keeps what it records.
   */
  sharedSettings?: SharedSettings;
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
export const CLAIM_ATTEMPTS = 5;

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
    if (!(await lockIndexIncarnation(client, alias)) && (await createIncarnation(client, alias, options)) !== undefined) return 'created';
    await upgradeMapping(client, alias);
    return 'exists';
  } catch (error) {
    // Its own refusals go out as they are; the client's errors become domain errors.
    if (clientErrorKind(error) === undefined) throw error;
    throw translateError(error, 'create lock index', undefined, false, serverName(client));
  }
}

/**
 * Makes a new incarnation with the next epoch: behind the alias as its write index, unless `replacing`
 * names the incarnation it is to replace (re-creation), which moves the alias itself once the new one
 * is ready. The name of the incarnation made, or undefined when another creator made one meanwhile.
 */
export async function createIncarnation(client: SearchClient, alias: string, options: EnsureLockIndexOptions, replacing?: string): Promise<string | undefined> {
  const registry = options.registry ?? REGISTRY_INDEX;
  const choice: EpochChoice = { ...(options.epoch !== undefined ? { epoch: options.epoch } : {}), unknownHistory: options.unknownHistory ?? 'first' };
  // Read before a legacy index goes: it is history too (epoch 0).
  let history = await epochHistory(client, alias, { registry });
  const knownBefore = history.known;
  // An alias answers `exists` too: one another creator has just made is no legacy index.
  if (replacing === undefined && (await client.indices.exists({ index: alias })) && !(await client.indices.existsAlias({ name: alias }))) {
    const idle = options.replaceIdleLegacyIndex && (await liveLeases(client, alias)) === 0;
    if (!idle) {
      throw new Error(
        `"${alias}" is a concrete index, not the alias of a lock index (an index made by an earlier version, or by hand). Let its leases run out, delete it, and run \`npm run index:create\` again.`,
      );
    }
    await client.indices.delete({ index: alias });
  }
  for (let attempt = 1; ; attempt++) {
    if (replacing === undefined && (await lockIndexIncarnation(client, alias))) return undefined;
    const epoch = nextEpoch(alias, history, choice, registry);
    const index = incarnationName(alias, epoch);
    if (!(await claimEpoch(client, { alias, epoch, index, createdAt: Date.now(), origin: 'created' }, registry))) {
      // Another creator holds this epoch: it is making the lock index now, or died trying (the epoch stays used).
      if (replacing === undefined && (await aliasAppears(client, alias, CLAIM_WAIT_MS))) return undefined;
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
    const { settings, mappings } = lockIndexDefinition(options.shards);
    try {
      await client.indices.create({
        index,
        settings,
        mappings: { ...mappings, _meta: metaWith({}, allSharedSettings(options.sharedSettings)) } as estypes.MappingTypeMapping,
        ...(replacing === undefined ? { aliases: { [alias]: { is_write_index: true } } } : {}),
      });
      return index;
    } catch (error) {
      // Another creator won the race (the alias would have two write indices, which Elasticsearch refuses); this epoch stays unused.
      if (replacing !== undefined || !(await lockIndexIncarnation(client, alias))) throw error;
      return undefined;
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
export async function upgradeMapping(client: SearchClient, index: string): Promise<void> {
  let missing = await missingFields(client, index);
  if (missing.length > 0 && !missing.some((field) => LOCK_DOCUMENT_CORE.includes(field))) {
    // A lock index of an earlier version lacks only fields added since: adding a field to a mapping is safe while in use.
    await client.indices.putMapping({ index, properties: definition.mappings.properties as Record<string, estypes.MappingProperty> });
    missing = await missingFields(client, index);
  }
  if (missing.length > 0) throw new Error(`Index ${index} exists but is not a lock index of this version (missing fields: ${missing.join(', ')}).`);
}

/** Fields whose absence means "not a lock index" rather than "a lock index of an earlier version". */
export const LOCK_DOCUMENT_CORE = ['namespace', 'granularity', 'key', 'holders', 'holders.lease', 'holders.expiresAt'];

export async function missingFields(client: SearchClient, index: string): Promise<string[]> {
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
