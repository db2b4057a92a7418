/**
 * Writes the workload's file tree into an Elasticsearch data index, one document per file (id = path),
 * so the tree the locks protect exists next to the lock index. Local mode only; removed afterwards.
 */
import type { WorkloadConfig } from '../../loadtests/lib/workload.js';
import { treeOfWorkload } from './user-workload.js';

export function seedIndexName(runId: string): string {
  return `lt-files-${runId}`.toLowerCase();
}

async function call(url: string, init: RequestInit & { body?: string; headers?: Record<string, string> }): Promise<unknown> {
  const auth: Record<string, string> = process.env.ES_API_KEY ? { Authorization: `ApiKey ${process.env.ES_API_KEY}` } : {};
  const response = await fetch(url, { ...init, headers: { ...init.headers, ...auth }, signal: AbortSignal.timeout(30_000) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return text ? (JSON.parse(text) as unknown) : undefined;
}

export async function seedTree(esUrl: string, index: string, workloads: WorkloadConfig[]): Promise<number> {
  const base = esUrl.replace(/\/+$/, '');
  await call(`${base}/${index}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      settings: { number_of_shards: 1, number_of_replicas: 0 },
      mappings: {
        properties: {
          path: { type: 'keyword' },
          directory: { type: 'keyword' },
          name: { type: 'keyword' },
          depth: { type: 'integer' },
          workload: { type: 'keyword' },
        },
      },
    }),
  });
  const lines: string[] = [];
  for (const workload of workloads) {
    for (const path of treeOfWorkload(workload).files) {
      const slash = path.lastIndexOf('/');
      lines.push(JSON.stringify({ index: { _id: `${workload.name}:${path}` } }));
      lines.push(
        JSON.stringify({
          path,
          directory: path.slice(0, slash) || '/',
          name: path.slice(slash + 1),
          depth: path.split('/').length - 2,
          workload: workload.name,
        }),
      );
    }
  }
  const result = (await call(`${base}/${index}/_bulk?refresh=true`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-ndjson' },
    body: `${lines.join('\n')}\n`,
  })) as { errors?: boolean };
  if (result?.errors) throw new Error(`bulk seeding of ${index} reported item errors`);
  return lines.length / 2;
}

export async function dropSeedIndex(esUrl: string, index: string): Promise<void> {
  await call(`${esUrl.replace(/\/+$/, '')}/${index}`, { method: 'DELETE' });
}
