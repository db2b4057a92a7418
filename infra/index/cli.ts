/** npm run index:create [-- --index name]: creates the lock index if it does not exist. */
import { createElasticsearchClient, ensureLockIndex, lockIndexIncarnation } from '../../functions/store/index.js';
import { resolveElasticsearch } from '../es/target.js';
import { parseFlags, printHelp, runCli, UsageError } from '../lib/cli.js';

const USAGE = `usage: npm run index:create [-- --index NAME]

Creates the lock index (an alias over one concrete index) if it does not exist, on ES_URL (with
ES_API_KEY) or the project's own node (started if needed).
  --index NAME   the alias (default LOCK_INDEX, else locks)
  --verbose      print stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed (e.g. Elasticsearch unreachable), 2 a usage mistake.`;

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { index: { type: 'string' } });
  if (printHelp(values, USAGE)) return 0;
  const index = (values.index as string | undefined) ?? process.env.LOCK_INDEX ?? 'locks';
  const from = values.index !== undefined ? '--index' : 'LOCK_INDEX';
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(index)) throw new UsageError(`${from}: must be an index name: lowercase letters, digits, ".", "_", "-" (got "${index}")`);
  const target = await resolveElasticsearch();
  const client = createElasticsearchClient({ url: target.url.split(','), ...(target.apiKey ? { apiKey: target.apiKey } : {}) });
  try {
    const result = await ensureLockIndex(client, index);
    console.log(`lock index ${index} (incarnation ${await lockIndexIncarnation(client, index)}) at ${target.url}: ${result}`);
  } finally {
    await client.close();
  }
  return 0;
}

runCli(main);
