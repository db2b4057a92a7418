/** Starts OpenSearch once per test run (unless OPENSEARCH_URL is set) for the opensearch project's test files. */
import type { TestProject } from 'vitest/node';
import { type EsTarget, resolveOpenSearch } from '../../infra/es/target.js';

let target: EsTarget | undefined;

export async function setup(project: TestProject): Promise<void> {
  target = await resolveOpenSearch((line) => console.log(`[opensearch] ${line}`));
  project.provide('searchProduct', 'opensearch');
  project.provide('esUrl', target.url);
  project.provide('esApiKey', '');
}

export async function teardown(): Promise<void> {
  await target?.stop();
}
