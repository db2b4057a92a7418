/** The lock index: an alias over one incarnation, created explicitly and safely, never by a write. */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteLockIndex, ensureLockIndex, epochOfIncarnation, lockIndexIncarnation } from '../../functions/store/index.js';
import { LOCK_INDEX_DEFINITION } from '../../functions/store/lock-index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import { closeTestClient, testClient } from '../support/engine.js';

let client: SearchClient;
const made: string[] = [];
const name = (label: string): string => {
  const alias = `locks-test-${label}-${randomBytes(4).toString('hex')}`;
  made.push(alias);
  return alias;
};

beforeAll(() => {
  client = testClient();
});
afterAll(async () => {
  for (const alias of made) await deleteLockIndex(client, alias);
  await closeTestClient(client);
});

describe('ensureLockIndex', () => {
  it('creates one incarnation behind the alias even when several callers race, and is idempotent', async () => {
    const alias = name('race');
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => ensureLockIndex(client, alias)));
    expect(outcomes.filter((outcome) => outcome === 'created')).toHaveLength(1);
    const incarnation = await lockIndexIncarnation(client, alias);
    expect(incarnation).toMatch(new RegExp(`^${alias}-e\\d{3}-\\d{8}-[0-9a-f]{8}$`));
    const behind = await client.indices.getAlias({ name: alias });
    expect(Object.keys(behind)).toEqual([incarnation]);
    expect(await ensureLockIndex(client, alias)).toBe('exists');
  });

  it('refuses a concrete index of that name (an earlier version) unless asked to replace it while no lease in it is live', async () => {
    const alias = name('legacy');
    await client.indices.create({ index: alias, mappings: { properties: { maxExpiresAt: { type: 'date', format: 'epoch_millis' } } } });
    await client.index({ index: alias, id: 'live', document: { maxExpiresAt: Date.now() + 60_000 }, refresh: true });
    await expect(ensureLockIndex(client, alias)).rejects.toThrow(/concrete index/);
    await expect(ensureLockIndex(client, alias, { replaceIdleLegacyIndex: true })).rejects.toThrow(/concrete index/);
    await client.index({ index: alias, id: 'live', document: { maxExpiresAt: Date.now() - 1 }, refresh: true });
    expect(await ensureLockIndex(client, alias, { replaceIdleLegacyIndex: true, unknownHistory: 'refuse' })).toBe('created');
    const incarnation = (await lockIndexIncarnation(client, alias))!;
    expect(incarnation).not.toBe(alias);
    // The legacy index is history (epoch 0, tokens below 10^16), so the epoch is known: its successor starts above it.
    expect(epochOfIncarnation(incarnation)).toBe(1);
  });

  it('adds the fields of this version to a lock index of an earlier one (tree marks: lockedBelow), and refuses an index that is not a lock index', async () => {
    const alias = name('upgrade');
    const { lockedBelow: _, ...earlier } = LOCK_INDEX_DEFINITION.mappings.properties;
    await client.indices.create({
      index: `${alias}-20260101-00000000`,
      settings: LOCK_INDEX_DEFINITION.settings,
      mappings: { ...LOCK_INDEX_DEFINITION.mappings, properties: earlier } as never,
      aliases: { [alias]: { is_write_index: true } },
    });
    expect(await ensureLockIndex(client, alias)).toBe('exists');
    const mapping = await client.indices.getMapping({ index: alias });
    expect(Object.values(mapping)[0]?.mappings.properties).toHaveProperty('lockedBelow');
    const other = name('other');
    await client.indices.create({
      index: `${other}-20260101-00000000`,
      mappings: { properties: { title: { type: 'text' } } },
      aliases: { [other]: { is_write_index: true } },
    });
    await expect(ensureLockIndex(client, other)).rejects.toThrow(/not a lock index/);
  });
});
