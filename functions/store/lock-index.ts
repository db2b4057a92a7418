/**
 * The lock index is an alias over one concrete index whose name carries a unique suffix: its
 * incarnation. Writes go through the alias with `require_alias`, so nothing ever re-creates a deleted
 * lock index by accident, and a lease token's note of a write names the incarnation it was made in.
 */
import { randomBytes } from 'node:crypto';
import type { Client, estypes } from '@elastic/elasticsearch';
import definition from '../../infra/index/lock-index.json' with { type: 'json' };
import { clientErrorKind, translateError } from './errors.js';

export const LOCK_INDEX_DEFINITION = definition;

/** The concrete index behind the alias, or undefined when there is no such alias. */
export async function lockIndexIncarnation(client: Client, alias: string): Promise<string | undefined> {
  const exists = await client.indices.existsAlias({ name: alias });
  if (!exists) return undefined;
  const found = await client.indices.getAlias({ name: alias });
  const writeIndex = Object.entries(found).find(([, entry]) => entry.aliases[alias]?.is_write_index)?.[0];
  return writeIndex ?? Object.keys(found)[0];
}

/**
 * Creates the lock index (a new incarnation behind the alias `alias`) unless it exists; its mapping
 * is checked for the fields the engine writes. Safe to run concurrently: two creators cannot both
 * make a write index for the alias.
 */
export async function ensureLockIndex(
  client: Client,
  alias: string,
  options: {
    /**
     * A concrete index named like the alias (made by an earlier version) is replaced when no lease in
     * it is live. For the project's own throwaway node; on a real cluster its holders' fencing tokens
     * would be larger than the new index's, so there it stays an error for an operator to decide.
     */
    replaceIdleLegacyIndex?: boolean;
  } = {},
): Promise<'created' | 'exists'> {
  try {
    if (!(await lockIndexIncarnation(client, alias))) {
      if (await client.indices.exists({ index: alias })) {
        const idle = options.replaceIdleLegacyIndex && (await liveLeases(client, alias)) === 0;
        if (!idle) {
          throw new Error(
            `"${alias}" is a concrete index, not the alias of a lock index (an index made by an earlier version, or by hand). Let its leases run out, delete it, and run \`npm run index:create\` again.`,
          );
        }
        await client.indices.delete({ index: alias });
      }
      const incarnation = `${alias}-${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomBytes(4).toString('hex')}`;
      try {
        await client.indices.create({ index: incarnation, ...(definition as object), aliases: { [alias]: { is_write_index: true } } });
        return 'created';
      } catch (error) {
        // Another creator won the race (the alias would have two write indices, which Elasticsearch refuses).
        if (!(await lockIndexIncarnation(client, alias))) throw error;
      }
    }
    let missing = await missingFields(client, alias);
    if (missing.length > 0 && !missing.some((field) => LOCK_DOCUMENT_CORE.includes(field))) {
      // A lock index of an earlier version lacks only fields added since: adding a field to a mapping is safe while in use.
      await client.indices.putMapping({ index: alias, properties: definition.mappings.properties as Record<string, estypes.MappingProperty> });
      missing = await missingFields(client, alias);
    }
    if (missing.length > 0) throw new Error(`Index ${alias} exists but is not a lock index of this version (missing fields: ${missing.join(', ')}).`);
    return 'exists';
  } catch (error) {
    // Its own refusals go out as they are; the client's errors become domain errors.
    if (clientErrorKind(error) === undefined) throw error;
    throw translateError(error, 'create lock index');
  }
}

/** Fields whose absence means "not a lock index" rather than "a lock index of an earlier version". */
const LOCK_DOCUMENT_CORE = ['namespace', 'granularity', 'key', 'holders', 'holders.lease', 'holders.expiresAt'];

async function missingFields(client: Client, alias: string): Promise<string[]> {
  const mapping = await client.indices.getMapping({ index: alias });
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

async function liveLeases(client: Client, index: string): Promise<number> {
  await client.indices.refresh({ index });
  const { count } = await client.count({ index, query: { range: { maxExpiresAt: { gt: Date.now() } } } });
  return count;
}

/** Deletes the lock index: every concrete index behind the alias (Elasticsearch refuses to delete through an alias). */
export async function deleteLockIndex(client: Client, alias: string): Promise<void> {
  const found = await client.indices.getAlias({ name: alias }, { ignore: [404] });
  const concrete = Object.keys(found).filter((name) => name !== 'error' && name !== 'status');
  if (concrete.length > 0) await client.indices.delete({ index: concrete }, { ignore: [404] });
  else await client.indices.delete({ index: alias }, { ignore: [404] });
}
