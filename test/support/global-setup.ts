/** Starts Elasticsearch once per test run (unless ES_URL is set) and hands its address to every test file. */
import type { TestProject } from 'vitest/node';
import type { SearchProduct } from '../../functions/store/search-client.js';
import { type EsTarget, resolveElasticsearch } from '../../infra/es/target.js';

let target: EsTarget | undefined;

export async function setup(project: TestProject): Promise<void> {
  target = await resolveElasticsearch((line) => console.log(`[es] ${line}`));
  project.provide('searchProduct', 'elasticsearch');
  project.provide('esUrl', target.url);
  project.provide('esApiKey', target.apiKey ?? '');
}

export async function teardown(): Promise<void> {
  await target?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Which product the test files of this project run against. */
    searchProduct: SearchProduct;
    /** Its URL (one, or several separated by commas): Elasticsearch's, or OpenSearch's in the opensearch project. */
    esUrl: string;
    /** Elasticsearch only. */
    esApiKey: string;
  }
}
