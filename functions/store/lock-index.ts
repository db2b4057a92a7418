/** Creates the lock index from infra/index/lock-index.json when it does not exist yet. */
import type { Client } from '@elastic/elasticsearch';
import definition from '../../infra/index/lock-index.json' with { type: 'json' };
import { translateError } from './errors.js';

export const LOCK_INDEX_DEFINITION = definition;

/** Idempotent: an existing index is left as it is (its mapping is checked for the fields the engine writes). */
export async function ensureLockIndex(client: Client, index: string): Promise<'created' | 'exists'> {
  try {
    await client.indices.create({ index, ...(definition as object) });
    return 'created';
  } catch (error) {
    const type = (error as { body?: { error?: { type?: string } } }).body?.error?.type;
    if (type !== 'resource_already_exists_exception') throw translateError(error, 'create lock index');
  }
  const mapping = await client.indices.getMapping({ index });
  const properties = Object.values(mapping)[0]?.mappings.properties ?? {};
  const missing = Object.keys(definition.mappings.properties).filter((field) => !(field in properties));
  if (missing.length > 0) {
    throw new Error(`Index ${index} exists but is not a lock index (missing fields: ${missing.join(', ')}).`);
  }
  return 'exists';
}
