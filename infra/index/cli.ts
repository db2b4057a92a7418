/** npm run index:create [-- --index name]: creates the lock index if it does not exist. */
import { createElasticsearchClient, ensureLockIndex, lockIndexIncarnation } from '../../functions/store/index.js';
import { resolveElasticsearch } from '../es/target.js';

const flag = process.argv.indexOf('--index');
const index = flag > 0 ? process.argv[flag + 1]! : (process.env.LOCK_INDEX ?? 'locks');
const target = await resolveElasticsearch();
const client = createElasticsearchClient({ url: target.url.split(','), ...(target.apiKey ? { apiKey: target.apiKey } : {}) });
const result = await ensureLockIndex(client, index);
console.log(`lock index ${index} (incarnation ${await lockIndexIncarnation(client, index)}) at ${target.url}: ${result}`);
await client.close();
