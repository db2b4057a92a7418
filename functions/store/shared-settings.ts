/**
 * The shared settings (packages/engine/src/settings.ts, SHARED_SETTINGS) as the lock index records them:
 * in its mapping's `_meta`, written when an incarnation is made (or, for one made before, by
 * `index:create --record-settings`), read by every process that builds an engine on it.
 */
import { SHARED_SETTINGS, type SharedSettingName, type SharedSettings } from '../../packages/engine/src/settings.js';
import type { SearchClient } from './search-client.js';

/** The `_meta` entry that holds them. */
export const SHARED_SETTINGS_META = 'sharedSettings';

type Meta = Record<string, unknown>;

/** The `_meta` of the index (or the one behind the alias) `index`. */
async function metaOf(client: SearchClient, index: string, options?: object): Promise<Meta> {
  const found = await client.indices.getMapping({ index }, options);
  return ((Object.values(found)[0]?.mappings as { _meta?: Meta } | undefined)?._meta ?? {}) as Meta;
}

/** What `_meta` records, each a whole number of at least 0; undefined when it records none (a lock index made before). */
function sharedSettingsIn(meta: Meta, index: string): SharedSettings | undefined {
  const entry = meta[SHARED_SETTINGS_META];
  if (entry === undefined) return undefined;
  const recorded: SharedSettings = {};
  for (const name of Object.keys(SHARED_SETTINGS) as SharedSettingName[]) {
    const value = (entry as Record<string, unknown>)[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
      throw new Error(
        `the lock index ${index} records ${name} as ${JSON.stringify(value)} in its mapping's _meta.${SHARED_SETTINGS_META}: not a whole number of ms`,
      );
    }
    recorded[name] = value;
  }
  return recorded;
}

/** The shared settings the index (or alias) `index` records; undefined when it records none. */
export async function readSharedSettings(client: SearchClient, index: string, options?: object): Promise<SharedSettings | undefined> {
  return sharedSettingsIn(await metaOf(client, index, options), index);
}

/** The `_meta` that records `settings`, the rest of `meta` kept. */
export const metaWith = (meta: Meta, settings: SharedSettings): Meta => ({ ...meta, [SHARED_SETTINGS_META]: settings });

/** Records `settings` in the mapping of the concrete index `index` (a put-mapping replaces `_meta` whole, so the rest of it is kept). */
export async function recordSharedSettings(client: SearchClient, index: string, settings: SharedSettings): Promise<void> {
  const meta = await metaOf(client, index);
  await client.indices.putMapping({ index, _meta: metaWith(meta, settings) });
}
