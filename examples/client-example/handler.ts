/**
 * A Lambda function that does one piece of work per order under a lock of the es-lease-locks
 * service, with @es-lease-locks/client:
 *
 * - the transport is picked by configuration: the HTTP API signed with the function's role
 *   (LOCKS_URL; SigV4 for routes with IAM authorization), or the lock functions invoked directly
 *   (LOCKS_FUNCTION_PREFIX, e.g. `es-lease-locks-prod-`: no API Gateway in between);
 * - `using()` acquires (waiting up to 2 s), renews in the background, aborts `signal` if the lock
 *   is lost, and releases at the end whatever happens;
 * - `remainingTimeMs` keeps every lease within the invocation's own deadline: a function that times
 *   out never leaves its lock held past that, and one started too late is refused before it asks.
 */
import { httpTransport, invokeTransport, LocalLockTable, LockClient, type Locker } from '@es-lease-locks/client';

/** The part of the Lambda context this handler uses. */
export interface LambdaContext {
  awsRequestId: string;
  getRemainingTimeInMillis(): number;
}

function transportFromEnv(env: NodeJS.ProcessEnv): Locker {
  if (env.LOCKS_FUNCTION_PREFIX) {
    return invokeTransport({
      functions: (operation) => `${env.LOCKS_FUNCTION_PREFIX}${operation}`,
      // LOCKS_LAMBDA_ENDPOINT only for a local invoke API (serverless-offline); on AWS the default endpoint.
      clientConfig: env.LOCKS_LAMBDA_ENDPOINT ? { endpoint: env.LOCKS_LAMBDA_ENDPOINT } : {},
    });
  }
  if (!env.LOCKS_URL) throw new Error('set LOCKS_URL (the lock service HTTP API) or LOCKS_FUNCTION_PREFIX (invoke the lock functions)');
  return httpTransport({ baseUrl: env.LOCKS_URL, sigv4: env.LOCKS_SIGV4 !== 'false' });
}

// Module scope: one client per container, so concurrent work in it queues in one local lock table.
export const locks = new LockClient({ transport: transportFromEnv(process.env), localTable: new LocalLockTable() });

export interface OrderEvent {
  orderId: string;
}

export async function handler(event: OrderEvent, context: LambdaContext): Promise<{ orderId: string; fencingToken: string; renewed: number }> {
  let renewed = 0;
  return locks.using(
    { namespace: 'orders', granularity: 'document', ids: [event.orderId], owner: `order-worker:${context.awsRequestId}`, ttlMs: 3_000, waitMs: 2_000 },
    async (signal, lock) => {
      // The work: here a pause longer than the lease, so that the lock renews itself meanwhile.
      // Real work passes `signal` on (fetch, the AWS SDK, timers) and `lock.fencingToken` with every write.
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, 3_500);
        signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            reject(signal.reason);
          },
          { once: true },
        );
      });
      return { orderId: event.orderId, fencingToken: lock.fencingToken, renewed };
    },
    { remainingTimeMs: () => context.getRemainingTimeInMillis(), onRenew: () => renewed++ },
  );
}
