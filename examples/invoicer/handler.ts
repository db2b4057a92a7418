/** The README's SQS consumer as deployed: its clients at module scope, one per container. */
import { Client } from '@elastic/elasticsearch';
import { httpTransport, LockClient } from '@es-lease-locks/client';
import { invoicer } from './invoicer.js';

// The HTTP API signed with the function's role (IAM authorization).
const locks = new LockClient({ transport: httpTransport({ baseUrl: process.env.LOCKS_URL!, sigv4: true }) });
export const handler = invoicer(locks, new Client({ node: process.env.DATA_URL! }));
