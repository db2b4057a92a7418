/**
 * Runs the handler once as Lambda would (a context with a 15 s deadline), then asks the lock service
 * who holds the order's lock: nobody, once the handler has answered. Prints one JSON line.
 *
 *   LOCKS_URL=http://127.0.0.1:3000 LOCKS_SIGV4=false node run.ts
 *   LOCKS_FUNCTION_PREFIX=es-lease-locks-local- LOCKS_LAMBDA_ENDPOINT=http://127.0.0.1:3002 node run.ts
 */
import { randomUUID } from 'node:crypto';
import { handler, locks } from './handler.ts';

const deadline = Date.now() + 15_000;
const orderId = process.argv[2] ?? `o-${randomUUID().slice(0, 8)}`;
const result = await handler({ orderId }, { awsRequestId: randomUUID(), getRemainingTimeInMillis: () => deadline - Date.now() });
const holders = await locks.inspect({ namespace: 'orders', granularity: 'document', ids: [orderId] });
console.log(JSON.stringify({ ...result, holdersAfter: holders.flatMap((state) => state.holders.filter((holder) => !holder.expired)).length }));
