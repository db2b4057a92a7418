/**
 * One local stack (Elasticsearch + serverless-offline with the bundled functions: HTTP API and the
 * Lambda invoke API) for a test file of the client package, on free ports and a lock index of its
 * own, started before the file's tests and stopped after them. Static test credentials stand in
 * for a role's (the default chain reads the environment first): the local stack checks none, the
 * recording proxy shows what was signed with them.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, inject } from 'vitest';
import { deleteLockIndex } from '../../../functions/store/index.js';
import { freePort } from '../../../infra/lib/free-port.js';
import { type StackDetails, startStack } from '../../../scripts/stack.js';
import { closeTestClient, testClient } from '../../support/engine.js';

export const TEST_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: 'AKIDCLIENTTEST',
  AWS_SECRET_ACCESS_KEY: 'secret-of-the-client-test',
  AWS_SESSION_TOKEN: 'session-token-of-the-client-test',
  AWS_REGION: 'eu-west-1',
};

export interface ClientStack {
  /** The running stack (available inside tests). */
  readonly details: StackDetails;
}

/** Registers the file's beforeAll / afterAll; `before` runs alongside the stack's start (e.g. packing the package). */
export function clientStack(label: string, before?: () => Promise<void>): ClientStack {
  const index = `locks-test-client-${label}-${randomBytes(4).toString('hex')}`;
  const saved: Record<string, string | undefined> = {};
  let details: StackDetails | undefined;
  beforeAll(async () => {
    for (const [name, value] of Object.entries(TEST_CREDENTIALS)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
    const [stack] = await Promise.all([
      startStack({
        port: await freePort(),
        lambdaPort: await freePort(),
        env: { ES_URL: inject('esUrl'), ES_API_KEY: inject('esApiKey'), LOCK_INDEX: index, MAX_CLOCK_SKEW_MS: '50', SWEEP_RATE: 'rate(1 day)' },
        // No worker thread per concurrent call: a renewal that meets a busy function does not pay a cold start
        // (seconds on a loaded 2-core machine), which the short leases of these tests could not absorb.
        inProcess: true,
      }),
      before?.(),
    ]);
    details = stack;
  }, 240_000);
  afterAll(async () => {
    await details?.stop();
    const client = testClient();
    await deleteLockIndex(client, index);
    await closeTestClient(client);
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  return {
    get details() {
      if (!details) throw new Error('the stack is not started yet');
      return details;
    },
  };
}
