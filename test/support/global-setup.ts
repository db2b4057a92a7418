/** Starts Elasticsearch once per test run (unless ES_URL is set) and hands its address to every test file. */
import type { TestProject } from 'vitest/node';
import { type EsTarget, resolveElasticsearch } from '../../infra/es/target.js';

let target: EsTarget | undefined;

export async function setup(project: TestProject): Promise<void> {
  target = await resolveElasticsearch((line) => console.log(`[es] ${line}`));
  project.provide('esUrl', target.url);
  project.provide('esApiKey', target.apiKey ?? '');
}

export async function teardown(): Promise<void> {
  await target?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    esUrl: string;
    esApiKey: string;
  }
}
