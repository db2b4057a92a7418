/** A fresh lock index per test file on the real Elasticsearch (or OpenSearch, in the opensearch project), and engines over it. */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createLockService, createSearchClient, deleteLockIndex, ensureLockIndex } from '../../functions/store/index.js';
import type { SearchClient } from '../../functions/store/search-client.js';
import type { SettingsOverrides } from '../../packages/engine/src/settings.js';

export function testClient(): SearchClient {
  const apiKey = inject('esApiKey');
  return createSearchClient({ product: inject('searchProduct'), url: inject('esUrl').split(','), ...(apiKey ? { apiKey } : {}), requestTimeoutMs: 30_000 });
}

const createdIndices = new Set<string>();

/**
 * Primary shards of the test lock indices when a test does not say: LOCK_TEST_SHARDS (default 1), so
 * that the whole engine specification can run on a lock index with several
 * (`LOCK_TEST_SHARDS=3 npx vitest run test/engine`).
 */
const DEFAULT_SHARDS = Number(process.env.LOCK_TEST_SHARDS ?? 1);

/**
 * The clock-skew allowance of the test lock indices and of the engines over them: each lock index
 * records it (a shared setting), and an engine given another value refuses to work on it.
 */
export const TEST_SKEW_MS = 50;

/** `skewMs`: the allowance the index records, for a test whose engines use another than TEST_SKEW_MS. */
export async function freshLockIndex(client: SearchClient, label: string, options: { shards?: number; skewMs?: number } = {}): Promise<string> {
  const index = `locks-test-${label}-${randomBytes(4).toString('hex')}`;
  await ensureLockIndex(client, index, { shards: options.shards ?? DEFAULT_SHARDS, sharedSettings: { maxClockSkewMs: options.skewMs ?? TEST_SKEW_MS } });
  createdIndices.add(index);
  return index;
}

/** Deletes the lock indices this test file created, then closes the client. */
export async function closeTestClient(client: SearchClient): Promise<void> {
  for (const index of createdIndices) await deleteLockIndex(client, index);
  createdIndices.clear();
  await client.close();
}

export function engineOn(client: SearchClient, index: string, settings: SettingsOverrides = {}) {
  return createLockService({ client, index, settings: { maxClockSkewMs: TEST_SKEW_MS, ...settings } }).service;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
