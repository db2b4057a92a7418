/**
 * Writes the workload's file tree into a data index of the lock store (Elasticsearch or OpenSearch),
 * one document per file (id = path), so the tree the locks protect exists next to the lock index.
 * Local mode only; removed afterwards.
 */
import type { SearchClient } from '../../functions/store/search-client.js';
import type { WorkloadConfig } from '../shared/workload.js';
import { treeOfWorkload } from './user-workload.js';

export function seedIndexName(runId: string): string {
  return `lt-files-${runId}`.toLowerCase();
}

export async function seedTree(client: SearchClient, index: string, workloads: WorkloadConfig[]): Promise<number> {
  await client.indices.create({
    index,
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
  });
  const operations: object[] = [];
  for (const workload of workloads) {
    for (const path of treeOfWorkload(workload).files) {
      const slash = path.lastIndexOf('/');
      operations.push({ index: { _id: `${workload.name}:${path}` } });
      operations.push({
        path,
        directory: path.slice(0, slash) || '/',
        name: path.slice(slash + 1),
        depth: path.split('/').length - 2,
        workload: workload.name,
      });
    }
  }
  const result = await client.bulk({ index, refresh: true, operations });
  if (result.errors) throw new Error(`bulk seeding of ${index} reported item errors`);
  return operations.length / 2;
}

export async function dropSeedIndex(client: SearchClient, index: string): Promise<void> {
  await client.indices.delete({ index });
}
